"""cyborg.compat.pymysql on PyMySQL's own connection: "preferred" mode's
TLS context is built once; a connection with ssl options builds its own.
PyMySQL before 1.2 (1.1, the pin of OpenStack 2026.1) has no "preferred"
mode: without ssl options a connection uses no TLS and builds no
context, and the override is called only with options."""

import ssl

import fixtures
import pymysql
import testtools

from cyborg.compat import pymysql as pymysql_compat

PREFERRED_MODE = tuple(int(part) for part in
                       pymysql.VERSION_STRING.split('.')[:2]) >= (1, 2)


class PreferredTLSTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.compat.pymysql._PREFERRED_TLS', []))

    def connection(self, **kwargs):
        # Not connected: PyMySQL builds the context in __init__.
        return pymysql_compat.Connection(host='127.0.0.1',
                                         defer_connect=True, **kwargs)

    def test_preferred_mode_shares_one_context(self):
        first, second = self.connection(), self.connection()
        if not PREFERRED_MODE:
            self.assertFalse(first.ssl)
            self.assertFalse(hasattr(first, 'ctx'))
            self.assertEqual([], pymysql_compat._PREFERRED_TLS)
            return
        self.assertTrue(first.ssl)
        self.assertIsInstance(first.ctx, ssl.SSLContext)
        self.assertIs(first.ctx, second.ctx)
        self.assertEqual(ssl.CERT_NONE, first.ctx.verify_mode)

    def test_ssl_options_build_their_own(self):
        options = {'check_hostname': False, 'verify_mode': False}
        first = self.connection(ssl=dict(options))
        second = self.connection(ssl=dict(options))
        self.assertIsNot(first.ctx, second.ctx)
        if PREFERRED_MODE:
            self.assertIsNot(first.ctx, self.connection().ctx)

    def test_no_tls_builds_none(self):
        self.assertFalse(self.connection(ssl_disabled=True).ssl)
