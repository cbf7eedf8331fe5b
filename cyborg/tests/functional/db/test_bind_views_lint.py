"""The bind's read (``_BIND_VIEWS``), which SQLAlchemy's MySQL compiler
takes for a cartesian product: what it says is what the filter of
``cyborg.db.accelerator_requests`` silences, and nothing else is."""

import re
import subprocess
import sys
import warnings

import sqlalchemy as sa

from cyborg.common import context as cyborg_context
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import api as db_api
from cyborg.db import statements
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


class BindViewsLintTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, 'mysql'))
        self.ctx = cyborg_context.get_admin_context()

    def said(self, statement, quiet=False, **params):
        """The SAWarnings of running ``statement`` (compiled anew), none
        filtered out but, when ``quiet``, the bind's."""
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter('always')
            if quiet:
                db_arqs.quiet_bind_views_lint()
            with db_api.core_transaction(writing=False) as connection:
                connection.execution_options(compiled_cache=None).execute(
                    *statements.single_values(statement, params)).all()
        return [str(w.message) for w in said
                if issubclass(w.category, sa.exc.SAWarning)]

    def test_what_mysql_says_of_the_bind_is_what_is_filtered(self):
        for rp_uuids in (['rp-1'], ['rp-1', 'rp-2']):
            said = self.said(db_arqs._BIND_VIEWS, b_uuids=['a'],
                             b_rp_uuids=rp_uuids)
            self.assertEqual(1, len(said), said)
            self.assertTrue(re.match(db_arqs.BIND_VIEWS_LINT, said[0]),
                            said[0])
            self.assertEqual([], self.said(
                db_arqs._BIND_VIEWS, quiet=True, b_uuids=['a'],
                b_rp_uuids=rp_uuids))

    def test_another_cartesian_product_is_still_said(self):
        arqs = db_arqs._ARQ
        handles = db_arqs._AH
        said = self.said(sa.select(arqs.c.id, handles.c.id).where(
            arqs.c.id == 1), quiet=True)
        self.assertEqual(1, len(said), said)
        self.assertIsNone(re.match(db_arqs.BIND_VIEWS_LINT, said[0]))

    def test_quiet_once_imported(self):
        # A process of its own: pytest keeps no filter that a module
        # installs while it is collected.
        out = subprocess.run(
            [sys.executable, '-c',
             'import warnings\n'
             'from cyborg.db import accelerator_requests as a\n'
             'print(any(f[0] == "ignore" and f[1] is not None and '
             'f[1].pattern == a.BIND_VIEWS_LINT for f in warnings.filters))'],
            capture_output=True, text=True, check=True, timeout=120)
        self.assertEqual('True', out.stdout.strip().splitlines()[-1])
