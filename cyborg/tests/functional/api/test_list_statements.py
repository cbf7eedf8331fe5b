"""The lists cost a fixed number of database statements per page,
whatever the page size: no query per item (N+1). Data from
``bulk_fill``, as ``tools/bench/lists`` fills 40,000 deployables."""

import re
import threading

import sqlalchemy as sa

from cyborg.tests.functional.api import base
from cyborg.tests.functional.db import bulk_fill

DEPLOYABLES = 48
ARQS = 24
_READS_TABLE = re.compile(r'\s*SELECT\b.*\bFROM\s+[a-z_]', re.I | re.S)


class _ListStatementsTests:

    def setUp(self):
        super().setUp()
        bulk_fill.fill(self.context, DEPLOYABLES, ARQS)
        # What the application reads once, when it serves its first
        # request, is not the lists' cost.
        self.get('/v2/deployables', version='2.4', limit=1)
        self.statements = []
        # The request runs in this thread (webtest calls the application);
        # the conductor's periodic checks in others are not the lists'.
        self.thread = threading.get_ident()
        sa.event.listen(self.db.engine, 'before_cursor_execute',
                        self._seen)
        self.addCleanup(sa.event.remove, self.db.engine,
                        'before_cursor_execute', self._seen)

    def _seen(self, _conn, _cursor, statement, *_args):
        # What reads a table; not SQLite's BEGIN, nor what the driver or
        # oslo.db ask of a new connection (SELECT @@..., SHOW ...).
        if (threading.get_ident() == self.thread
                and _READS_TABLE.match(statement)):
            self.statements.append(statement)

    def count(self, path, key, version='2.4', **query):
        """(statements one GET ran, its body's items, its next link)."""
        del self.statements[:]
        response = self.get(path, version=version, **query)
        self.assertEqual(200, response.status_int, response.body)
        return (len(self.statements), response.json[key],
                response.json.get('next'))

    def walk_counts(self, path, key, limit, total):
        """[(statements, items)] of every page of a walk; checks it saw
        every item once."""
        counts, seen, query = [], [], {'limit': limit}
        while True:
            count, items, following = self.count(path, key, **query)
            counts.append((count, len(items)))
            seen += [item['uuid'] for item in items]
            if not following:
                break
            query = {'limit': limit, 'marker': items[-1]['uuid']}
        self.assertEqual(total, len(set(seen)))
        self.assertEqual(total, len(seen))
        return counts

    def test_deployables_two_statements_a_page_three_after_a_marker(self):
        # The page, then the attributes of all its deployables at once
        # (none for an empty page); a marker is one more read.
        for limit in (4, 16, 17, DEPLOYABLES):
            counts = self.walk_counts('/v2/deployables', 'deployables',
                                      limit, DEPLOYABLES)
            self.assertEqual(
                [(bool(i) + (2 if n else 1), n)
                 for i, (_count, n) in enumerate(counts)], counts, limit)
        count, items, _ = self.count('/v2/deployables', 'deployables',
                                     sort_key='name', sort_dir='asc',
                                     limit=7)
        self.assertEqual((2, 7), (count, len(items)))

    def test_arqs_one_statement_a_page_two_after_a_marker(self):
        for limit in (3, 12, 13, ARQS):
            counts = self.walk_counts('/v2/accelerator_requests', 'arqs',
                                      limit, ARQS)
            self.assertEqual([(1 + bool(i), n)
                              for i, (_count, n) in enumerate(counts)],
                             counts, limit)

    def test_whole_lists_before_paging_cost_the_same(self):
        count, items, _ = self.count('/v2/deployables', 'deployables',
                                     version='2.0')
        self.assertEqual((2, DEPLOYABLES), (count, len(items)))
        count, items, _ = self.count('/v2/accelerator_requests', 'arqs',
                                     version='2.0')
        self.assertEqual((1, ARQS), (count, len(items)))

    def test_hardware_is_one_statement(self):
        count, items, _ = self.count('/v2/hardware', 'hardware',
                                     version='2.6')
        self.assertEqual((1, DEPLOYABLES), (count, len(items)),
                         self.statements)
        self.assertEqual('bulk-00001', items[0]['host'])


class SQLiteListStatementsTest(_ListStatementsTests,
                               base.APIResourceTestCase):
    backend = 'sqlite'


class MySQLListStatementsTest(_ListStatementsTests,
                              base.APIResourceTestCase):
    backend = 'mysql'
