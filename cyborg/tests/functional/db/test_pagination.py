"""Keyset paging in the database (``cyborg.db.pagination``) against each
real database: every row exactly once, in order, whatever the sort key,
including sort keys with ties and NULLs."""

from oslo_utils import uuidutils

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db import pagination
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

# Names with ties (two of each) and descriptions with NULLs, so that the
# order needs the ``id`` tie-breaker.
ROWS = [('dp-%d' % (i // 2), None if i % 3 else 'd%d' % i)
        for i in range(11)]


@db_api.writer
def _insert(context):
    for i, (name, description) in enumerate(ROWS):
        context.session.add(models.DeviceProfile(
            uuid=uuidutils.generate_uuid(), name='%s-%d' % (name, i),
            profile_json='{"groups": []}', description=description))


@db_api.reader
def _page(context, page, **kwargs):
    query = context.session.query(models.DeviceProfile)
    return [(row.uuid, row.name, row.description, row.id)
            for row in pagination.apply(query, models.DeviceProfile, page,
                                        **kwargs)]


class _PagingTests:

    backend = None

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, self.backend))
        self.context = cyborg_context.get_admin_context()
        _insert(self.context)

    def walk(self, limit, **sort):
        """Every page of ``limit`` rows, following markers to the end."""
        seen, marker = [], None
        for _ in range(len(ROWS) + 2):
            rows = _page(self.context, pagination.Page(
                limit=limit, marker=marker, **sort))
            seen.extend(rows)
            if len(rows) < limit:
                return seen
            marker = rows[-1][0]
        self.fail('paging did not end')

    def test_default_order_is_id(self):
        rows = _page(self.context, None)
        self.assertEqual(sorted(r[3] for r in rows), [r[3] for r in rows])

    def test_every_row_once_in_order(self):
        everything = _page(self.context, pagination.Page(
            sort_key='name', sort_dir='desc'))
        for limit in (1, 3, 4, 11, 20):
            self.assertEqual(everything, self.walk(
                limit, sort_key='name', sort_dir='desc'), limit)

    def test_nullable_sort_key(self):
        everything = _page(self.context, pagination.Page(
            sort_key='description', sort_dir='asc'))
        self.assertEqual(len(ROWS), len(everything))
        self.assertEqual(everything, self.walk(
            2, sort_key='description', sort_dir='asc'))

    def test_unknown_marker(self):
        self.assertRaises(exception.MarkerNotFound, _page, self.context,
                          pagination.Page(marker=uuidutils.generate_uuid()))

    def test_default_key_and_direction(self):
        rows = _page(self.context, pagination.Page(limit=3),
                     default_key='created_at', default_dir='desc')
        self.assertEqual(3, len(rows))
        ids = [r[3] for r in _page(self.context, None,
                                   default_key='created_at',
                                   default_dir='desc')]
        self.assertEqual(ids[:3], [r[3] for r in rows])


class SQLitePagingTest(_PagingTests, base.TestCase):
    backend = 'sqlite'


class MySQLPagingTest(_PagingTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLPagingTest(_PagingTests, base.TestCase):
    backend = 'postgresql'


