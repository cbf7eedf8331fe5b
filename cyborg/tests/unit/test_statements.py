"""cyborg.db.statements: a list parameter of one value is compared with
``=`` (``<>`` for ``NOT IN``), in a variant of the statement made once,
and the rows are those the ``IN`` gives."""

import sqlalchemy as sa
import testtools

from cyborg.db import statements

_T = sa.table('t', sa.column('id', sa.Integer), sa.column('name', sa.String))
_INNER = sa.table('handles', sa.column('t_id', sa.Integer),
                  sa.column('free', sa.Boolean))
_IN = sa.select(_T.c.id).where(statements.param_in(_T.c.name)).order_by(
    _T.c.id)
_NOT_IN = sa.select(_T.c.id).where(
    _T.c.id.not_in(sa.bindparam('b_ids', expanding=True)),
    statements.param_in(_T.c.name)).order_by(_T.c.id)
# A correlated subquery: the variant keeps it correlated.
_FIRST = sa.select(sa.func.min(_INNER.c.t_id)).where(
    _INNER.c.t_id == _T.c.id, _INNER.c.free == sa.true()).scalar_subquery()
_CORRELATED = sa.select(_T.c.id, _FIRST.label('first')).where(
    statements.param_in(_T.c.id)).order_by(_T.c.id)


def _sql(statement):
    return ' '.join(str(statement.compile()).split())


class SingleValuesTest(testtools.TestCase):

    def test_one_value_compared_with_equals(self):
        statement, params = statements.single_values(_IN, {'b_names': ['a']})
        self.assertEqual({'b_names': 'a'}, params)
        self.assertIn('WHERE t.name = :b_names', _sql(statement))
        self.assertNotIn(' IN ', _sql(statement))
        # Made once.
        again, _ = statements.single_values(_IN, {'b_names': ('b',)})
        self.assertIs(statement, again)

    def test_not_in_of_one_value(self):
        statement, params = statements.single_values(
            _NOT_IN, {'b_ids': [1], 'b_names': ['a', 'b']})
        self.assertEqual({'b_ids': 1, 'b_names': ['a', 'b']}, params)
        sql = _sql(statement)
        self.assertIn('t.id != :b_ids', sql)
        self.assertIn('t.name IN (', sql)

    def test_other_lists_and_statements_as_given(self):
        for statement, params in (
                (_IN, {'b_names': ['a', 'b']}),
                (_IN, {'b_names': []}),
                (_IN, {'b_names': 'a'}),
                (sa.select(_T.c.id).where(_T.c.id == sa.bindparam('b_id')),
                 {'b_id': [1]})):
            self.assertEqual((statement, params),
                             statements.single_values(statement, params))

    def test_correlated_subquery_kept(self):
        statement, _ = statements.single_values(_CORRELATED,
                                                {'b_ids': [1]})
        self.assertIn('WHERE handles.t_id = t.id', _sql(statement))
        self.assertIn('WHERE t.id = :b_ids', _sql(statement))


class RowsTest(testtools.TestCase):
    """The rows of each form, on SQLite, NULLs included."""

    def setUp(self):
        super().setUp()
        self.engine = sa.create_engine('sqlite://')
        self.addCleanup(self.engine.dispose)
        with self.engine.begin() as connection:
            connection.exec_driver_sql(
                'CREATE TABLE t (id INTEGER, name VARCHAR)')
            connection.exec_driver_sql(
                'CREATE TABLE handles (t_id INTEGER, free BOOLEAN)')
            connection.execute(_T.insert(), [
                {'id': 1, 'name': 'a'}, {'id': 2, 'name': 'b'},
                {'id': 3, 'name': None}, {'id': None, 'name': 'a'}])
            connection.execute(_INNER.insert(), [
                {'t_id': 1, 'free': False}, {'t_id': 1, 'free': True},
                {'t_id': 2, 'free': True}])

    def rows(self, statement, **params):
        """The rows of the statement as ``statements.run`` runs it, and
        as it is."""
        with self.engine.connect() as connection:
            ran = connection.execute(
                *statements.single_values(statement, params)).all()
            plain = connection.execute(statement, params).all()
        return ran, plain

    def test_same_rows(self):
        for statement, params in (
                (_IN, {'b_names': ['a']}),
                (_IN, {'b_names': ['z']}),
                (_NOT_IN, {'b_ids': [1], 'b_names': ['a']}),
                (_NOT_IN, {'b_ids': [2], 'b_names': ['a', 'b']}),
                (_CORRELATED, {'b_ids': [1]}),
                (_CORRELATED, {'b_ids': [2]})):
            ran, plain = self.rows(statement, **params)
            self.assertEqual(plain, ran, params)
        self.assertEqual([(None,), (1,)], self.rows(_IN, b_names=['a'])[0])
        self.assertEqual([(1, 1)], self.rows(_CORRELATED, b_ids=[1])[0])
