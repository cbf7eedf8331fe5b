"""cyborg-aio as a user runs it: one process, one port, real Placement."""

import os
import signal

import fixtures
import sqlalchemy as sa
import testtools

from cyborg.aio import service as aio_service
from cyborg.tests.functional import daemons
from cyborg.tests.functional.test_hello import wait_for


class AllInOneTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.state_dir = os.path.join(self.tmp, 'state')
        self.port = daemons.free_port()
        self.base = 'http://127.0.0.1:%d' % self.port

    def start(self, *extra):
        aio = daemons.Daemon(
            self, 'aio', ['--port', str(self.port), '--state-dir',
                          self.state_dir] + list(extra),
            os.path.join(self.tmp, 'aio.log'))
        daemons.wait_for_http(self.base + '/v2', daemon=aio)
        return aio

    def hosts(self):
        engine = sa.create_engine('sqlite:///%s' % os.path.join(
            self.state_dir, 'cyborg.sqlite'))
        try:
            with engine.connect() as connection:
                return dict(connection.execute(sa.text(
                    'SELECT hostname, status FROM hosts')).fetchall())
        finally:
            engine.dispose()

    def providers(self):
        response = daemons.wait_for_http(
            self.base + '/placement/resource_providers',
            headers={'X-Auth-Token': 'admin'})
        self.assertEqual(200, response.status_code)
        return {rp['name']: rp for rp in response.json()['resource_providers']}

    def test_serves_api_and_placement_and_stops_on_sigterm(self):
        config = daemons.write_config(os.path.join(self.tmp, 'aio.conf'), {
            'DEFAULT': {'host': 'aio-test-host'}})
        aio = self.start('--config-file', config)
        response = daemons.wait_for_http(self.base + '/v2')
        self.assertEqual(200, response.status_code)
        self.assertEqual('v2.0', response.json()['id'])
        self.assertEqual(self.base + '/v2/',
                         response.json()['links'][0]['href'])
        root = daemons.wait_for_http(self.base + '/').json()
        self.assertEqual('2.5', root['default_version']['max_version'])
        # Its own agent said hello to its own conductor.
        wait_for(lambda: self.hosts().get('aio-test-host') == 'up')
        # Without Nova the all-in-one made the compute node provider
        # (before it started the conductor).
        provider = self.providers()['aio-test-host']
        self.assertEqual(aio_service.compute_node_uuid('aio-test-host'),
                         provider['uuid'])
        self.assertEqual(0, aio.terminate())

    def test_restart_keeps_state(self):
        aio = self.start()
        wait_for(lambda: self.hosts())
        # The compute node and the fake driver's device provider.
        first = wait_for(lambda: len(self.providers()) == 2 and
                         self.providers())
        # Ctrl-C stops it as cleanly as SIGTERM.
        self.assertEqual(0, aio.terminate(signum=signal.SIGINT))
        self.start()
        self.assertEqual(first.keys(), self.providers().keys())
        self.assertEqual(1, len(self.hosts()))

    def test_port_in_use_is_a_clear_failure(self):
        blocker = self.start()
        other = daemons.Daemon(
            self, 'aio', ['--port', str(self.port), '--state-dir',
                          os.path.join(self.tmp, 'other')],
            os.path.join(self.tmp, 'other.log'))
        self.assertEqual(1, other.process.wait(60))
        self.assertIn('Address already in use', other.output())
        self.assertTrue(blocker.running())
