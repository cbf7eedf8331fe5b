"""The database URL cyborg connects with."""

import testtools

from cyborg.db import api as db_api


class ConnectionURLTest(testtools.TestCase):

    def test_mysql_connects_with_utf8mb4(self):
        self.assertEqual(
            'mysql+pymysql://cyborg:p%40ss@db/cyborg?charset=utf8mb4',
            db_api.connection_url('mysql+pymysql://cyborg:p%40ss@db/cyborg'))

    def test_a_charset_given_is_kept(self):
        url = 'mysql+pymysql://cyborg@db/cyborg?charset=utf8&ssl=1'
        self.assertEqual(url, db_api.connection_url(url))

    def test_other_databases_unchanged(self):
        for url in ('postgresql+psycopg2://cyborg@db/cyborg',
                    'sqlite:////var/lib/cyborg/cyborg.sqlite', None, ''):
            self.assertEqual(url, db_api.connection_url(url))
