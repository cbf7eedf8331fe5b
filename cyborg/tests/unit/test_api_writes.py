"""The guard that keeps API code from writing to the database."""

from oslo_db import exception as db_exc

from cyborg.common import context
from cyborg.db import hosts as db_hosts
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


def _run_as_module(module_name, func, *args):
    """Call ``func`` from a frame that belongs to ``module_name``."""
    namespace = {'__name__': module_name, 'func': func, 'args': args}
    exec('def call():\n    return func(*args)\n', namespace)  # noqa: S102
    return namespace['call']()


def _api_write_error(error):
    """The APIWriteError in ``error``'s chain of wrapped errors, or None."""
    while error is not None:
        if isinstance(error, cyborg_fixtures.APIWriteError):
            return error
        error = (getattr(error, 'inner_exception', None)
                 or error.__cause__ or error.__context__)
    return None


class APIWriteGuardTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self))
        self.ctx = context.get_admin_context()

    def test_write_from_api_code_fails(self):
        # oslo.db's engines wrap errors raised in engine events in a
        # DBError; the guard's own error is inside it.
        error = self.assertRaises(
            (cyborg_fixtures.APIWriteError, db_exc.DBError), _run_as_module,
            'cyborg.api.controllers.v2.example', db_hosts.record_hello,
            self.ctx, 'cmp-1', None, None, [])
        error = _api_write_error(error)
        self.assertIsInstance(error, cyborg_fixtures.APIWriteError)
        self.assertIn('cyborg.api.controllers.v2.example', str(error))

    def test_read_from_api_code_is_fine(self):
        db_hosts.record_hello(self.ctx, 'cmp-1', None, None, [])
        counts = _run_as_module('cyborg.api.controllers.v2.example',
                                db_hosts.status_counts, self.ctx)
        self.assertEqual({'up': 1}, counts)

    def test_write_from_conductor_code_is_fine(self):
        _run_as_module('cyborg.conductor.liveness', db_hosts.record_hello,
                       self.ctx, 'cmp-1', None, None, [])
        self.assertEqual({'up': 1}, db_hosts.status_counts(self.ctx))

    def test_a_module_that_only_looks_like_the_api_may_write(self):
        _run_as_module('cyborg.apiary', db_hosts.record_hello,
                       self.ctx, 'cmp-1', None, None, [])
