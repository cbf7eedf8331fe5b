"""/healthcheck's backends: the database and broker checks, cached."""

import threading
import time

import fixtures
import sqlalchemy as sa
import webob

from cyborg.api import app as api_app
from cyborg.api import health
from cyborg.common import rpc
from cyborg.db import api as db_api
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import daemons


class CachedCheckTest(base.TestCase):

    def test_a_result_is_reused_until_it_is_old(self):
        runs = []

        def check():
            runs.append(1)
            return (True, 'x: OK', str(len(runs)))
        cached = health.CachedCheck('x', check, ttl=0.2)
        self.assertEqual((True, 'x: OK', '1'), cached.result())
        for _ in range(50):
            cached.result()
        self.assertEqual(1, len(runs))
        time.sleep(0.25)
        self.assertEqual('2', cached.result()[2])

    def test_a_check_that_hangs_is_a_failure_after_the_timeout(self):
        release = threading.Event()
        self.addCleanup(release.set)
        runs = []

        def check():
            runs.append(1)
            release.wait(10)
            return (True, 'x: OK', '')
        cached = health.CachedCheck('x', check, ttl=0, timeout=0.1)
        started = time.monotonic()
        self.assertEqual((False, 'x: no answer within 0.1 s'),
                         cached.result()[:2])
        # Requests meanwhile wait no longer, and start no other run.
        self.assertFalse(cached.result()[0])
        self.assertLess(time.monotonic() - started, 2)
        self.assertEqual(1, len(runs))
        release.set()
        for _ in range(100):
            if cached.result()[0]:
                break
            time.sleep(0.01)
        self.assertTrue(cached.result()[0])

    def test_an_exception_is_a_failure(self):
        def check():
            raise RuntimeError('broken')
        self.assertEqual((False, 'x: the check failed', 'broken'),
                         health.CachedCheck('x', check).result())

    def test_a_change_is_logged_once(self):
        log = self.useFixture(fixtures.FakeLogger('cyborg.api.health'))
        state = [True]
        cached = health.CachedCheck(
            'x', lambda: (state[0], 'x: %s' % state[0], 'd'), ttl=0)
        for value in (True, True, False, False, True):
            state[0] = value
            cached.result()
        self.assertEqual(['Health check: x: False (d)',
                          'Health check: x: True (d)'],
                         log.output.splitlines())

    def test_a_forked_process_runs_its_own_check(self):
        cached = health.CachedCheck('x', lambda: (True, 'x: OK', ''))
        cached.result()
        cached._pid = -1  # as seen from a child of the process
        cached.check = lambda: (False, 'x: child', '')
        self.assertEqual('x: child', cached.result()[1])


class DatabaseCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(cyborg_fixtures.Database(self))
        self.flags(connection='mysql+pymysql://cyborg:pw1234@db/cyborg',
                   group='database')

    def test_ok(self):
        available, reason, details = health.DatabaseCheck(
            self.conf, {}).probe()
        self.assertEqual((True, 'database: OK'), (available, reason))

    def test_a_database_that_refuses_is_named_without_its_password(self):
        error = sa.exc.OperationalError('SELECT 1', {}, Exception(
            "(2003, \"Can't connect to MySQL server on 'db' ([Errno 111] "
            "Connection refused)\")"))
        self.useFixture(fixtures.MockPatchObject(
            db_api.reader, 'get_engine', side_effect=error))
        available, reason, details = health.DatabaseCheck(
            self.conf, {}).probe()
        self.assertEqual((False, 'database: unavailable (unreachable)'),
                         (available, reason))
        self.assertTrue(details.startswith(
            'mysql+pymysql://cyborg:***@db/cyborg: (2003, "Can\'t connect'),
            details)
        self.assertNotIn('pw1234', details)


class BrokerCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        rpc.register_opts(self.conf)

    def test_in_process_messaging_passes(self):
        self.flags(transport_url='local:/')
        self.assertEqual((True, 'broker: OK (in-process messaging)'),
                         health.BrokerCheck(self.conf, {}).probe()[:2])

    def test_a_broker_that_does_not_answer_fails(self):
        port = daemons.free_port()  # nothing listens on it
        self.flags(transport_url='rabbit://cyborg:s3cret@127.0.0.1:%d/' % port)
        available, reason, details = health.BrokerCheck(
            self.conf, {}).probe()
        self.assertEqual((False, 'broker: unreachable'), (available, reason))
        self.assertIn('127.0.0.1:%d' % port, details)
        self.assertNotIn('s3cret', details)


class HealthcheckAppTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self))
        rpc.register_opts(self.conf)
        self.flags(transport_url='local:/')

    def get(self, app):
        return webob.Request.blank('/healthcheck').get_response(app)

    def test_the_backends_are_cyborgs_by_default(self):
        app = api_app.healthcheck_app(self.conf)
        self.assertEqual(['cyborg_database', 'cyborg_broker'],
                         list(self.conf.healthcheck.backends))
        response = self.get(app)
        self.assertEqual(200, response.status_int)
        self.assertEqual('database: OK\nbroker: OK (in-process messaging)',
                         response.text)

    def test_a_failed_check_is_503_with_its_reason(self):
        self.useFixture(fixtures.MockPatchObject(
            db_api.reader, 'get_engine',
            side_effect=sa.exc.OperationalError('SELECT 1', {}, Exception(
                'Connection refused'))))
        response = self.get(api_app.healthcheck_app(self.conf))
        self.assertEqual(503, response.status_int)
        self.assertIn('database: unavailable (unreachable)', response.text)

    def test_a_list_without_them_is_warned(self):
        log = self.useFixture(fixtures.FakeLogger('cyborg.api.app'))
        api_app.healthcheck_app(self.conf)  # registers [healthcheck]
        self.flags(backends=['disable_by_file', 'cyborg_broker'],
                   group='healthcheck')
        api_app.healthcheck_app(self.conf)
        self.assertIn('[healthcheck] backends leaves out cyborg_database',
                      log.output)

    def test_a_backend_that_is_not_installed_is_an_error(self):
        log = self.useFixture(fixtures.FakeLogger('cyborg.api.app'))
        api_app.healthcheck_app(self.conf)  # registers [healthcheck]
        self.flags(backends=['cyborg_database', 'cyborg_broker',
                             'cyborg_databse'], group='healthcheck')
        api_app.healthcheck_app(self.conf)
        self.assertIn('[healthcheck] backends names cyborg_databse, which '
                      'no installed package provides', log.output)
        self.assertEqual(['cyborg_databse'],
                         health.unknown_backends(self.conf))
