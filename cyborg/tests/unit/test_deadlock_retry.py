"""Every writer transaction is retried on deadlock by oslo.db's helper:
on a Galera cluster, a commit that fails certification is a deadlock to
the client (doc/source/admin/galera.rst)."""

import importlib
import inspect
import pkgutil

import fixtures
from oslo_db import exception as db_exc
import testtools

import cyborg.conductor
import cyborg.db
from cyborg.db import api as db_api


def _modules():
    for package in (cyborg.db, cyborg.conductor):
        for info in pkgutil.iter_modules(package.__path__):
            yield importlib.import_module('%s.%s' % (package.__name__,
                                                     info.name))


def _writers():
    """(name, function) of every function decorated with the writer, or
    writing through ``db_api.core_transaction``."""
    for module in _modules():
        for name, value in vars(module).items():
            if not inspect.isfunction(value):
                continue
            if getattr(value, 'cyborg_writer', False) or (
                    'core_transaction()' in inspect.getsource(
                        inspect.unwrap(value))
                    and value.__module__ == module.__name__
                    and name != 'core_transaction'):
                yield '%s.%s' % (module.__name__, name), value


class DeadlockRetryTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # oslo.db waits between retries; the tests need not.
        self.useFixture(fixtures.MonkeyPatch('oslo_db.api.time.sleep',
                                             lambda _seconds: None))

    def test_every_writer_retries_deadlocks(self):
        writers = dict(_writers())
        # The resource modules have writers; the test sees them.
        self.assertIn('cyborg.db.accelerator_requests.bind', writers)
        self.assertIn('cyborg.db.rpc_nonces._insert', writers)
        self.assertGreater(len(writers), 20)
        self.assertEqual([], sorted(
            name for name, function in writers.items()
            if not getattr(function, 'cyborg_retries_deadlocks', False)))

    def test_a_deadlock_runs_the_whole_function_again(self):
        calls = []

        @db_api.retry_on_deadlock
        def write():
            calls.append(1)
            if len(calls) < 3:
                raise db_exc.DBDeadlock()
            return 'done'

        self.assertEqual('done', write())
        self.assertEqual(3, len(calls))

    def test_it_gives_up_after_its_retries(self):
        calls = []

        @db_api.retry_on_deadlock
        def write():
            calls.append(1)
            raise db_exc.DBDeadlock()

        self.assertRaises(db_exc.DBDeadlock, write)
        self.assertEqual(db_api.DEADLOCK_RETRIES + 1, len(calls))

    def test_other_errors_are_not_retried(self):
        calls = []

        @db_api.retry_on_deadlock
        def write():
            calls.append(1)
            raise db_exc.DBDuplicateEntry()

        self.assertRaises(db_exc.DBDuplicateEntry, write)
        self.assertEqual(1, len(calls))
