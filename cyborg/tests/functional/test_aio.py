"""cyborg-aio as a user runs it: one process, one port, real Placement."""

import os
import signal
import uuid

import fixtures
import requests
import sqlalchemy as sa
import testtools

from cyborg.aio import service as aio_service
from cyborg.api import microversion
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

    def query(self, sql, **params):
        """The rows of ``sql`` in the all-in-one's database."""
        engine = sa.create_engine('sqlite:///%s' % os.path.join(
            self.state_dir, 'cyborg.sqlite'))
        try:
            with engine.connect() as connection:
                return connection.execute(sa.text(sql), params).fetchall()
        finally:
            engine.dispose()

    def hosts(self):
        return dict(self.query('SELECT hostname, status FROM hosts'))

    def sync_pending(self, hostname):
        return [True] == [row[0] for row in self.query(
            'SELECT sync_pending FROM hosts WHERE hostname = :h',
            h=hostname)]

    def providers(self):
        response = daemons.wait_for_http(
            self.base + '/placement/resource_providers',
            headers={'X-Auth-Token': 'admin',
                     'OpenStack-API-Version': 'placement 1.14'})
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
        self.assertEqual(microversion.VERSIONS[-1][0],
                         root['default_version']['max_version'])
        # Its health: its database, and messages that stay in the process.
        health = requests.get(self.base + '/healthcheck', timeout=30)
        self.assertEqual((200, 'database: OK\nbroker: OK (in-process '
                          'messaging)'), (health.status_code, health.text))
        # Its own agent said hello to its own conductor.
        wait_for(lambda: self.hosts().get('aio-test-host') == 'up')
        # Without Nova the all-in-one made the compute node provider
        # (before it started the conductor).
        provider = self.providers()['aio-test-host']
        self.assertEqual(aio_service.compute_node_uuid('aio-test-host'),
                         provider['uuid'])
        # Both databases keep their write-ahead log between transactions
        # (a connection stays open), rather than checkpointing and
        # deleting it at the end of each.
        for name in ('cyborg.sqlite', 'placement.sqlite'):
            self.assertTrue(os.path.exists(os.path.join(
                self.state_dir, name + '-wal')), name)
        self.assertEqual(0, aio.terminate())
        # Every request is in the log: cyborg's API and the embedded
        # Placement's, each in the form of OpenStack services.
        log = aio.output()
        self.assertRegex(log, r'cyborg\.api\.middleware\.access_log '
                         r'.*127\.0\.0\.1 "GET /v2 HTTP/1\.1" status: 200 '
                         r'len: \d+ time: ')
        self.assertRegex(log, r'placement\.requestlog .*127\.0\.0\.1 '
                         r'"GET /placement/resource_providers" status: 200')

    def create_provider(self, name, uuid):
        """A root provider, made as nova-compute makes its own."""
        response = requests.post(
            self.base + '/placement/resource_providers',
            json={'name': name, 'uuid': uuid},
            headers={'X-Auth-Token': 'admin',
                     'OpenStack-API-Version': 'placement 1.20'}, timeout=10)
        self.assertEqual(200, response.status_code, response.text)

    def test_with_nova_the_compute_node_is_novas(self):
        # A Nova is configured: the all-in-one leaves the compute node
        # provider to nova-compute, which gives it its own uuid, and hangs
        # the accelerators under it once it exists.
        config = daemons.write_config(os.path.join(self.tmp, 'aio.conf'), {
            'DEFAULT': {'host': 'aio-nova-host'},
            'conductor': {'placement_retry_interval': 1},
            'nova': {'auth_type': 'admin_token', 'token': 'nova',
                     'endpoint': 'http://127.0.0.1:%d/v2.1' %
                     daemons.free_port()}})
        aio = self.start('--config-file', config)
        wait_for(lambda: self.hosts().get('aio-nova-host') == 'up')
        # Its report came and found no compute node to sync under.
        wait_for(lambda: self.sync_pending('aio-nova-host'))
        self.assertEqual({}, self.providers())
        nova_uuid = str(uuid.uuid4())
        self.create_provider('aio-nova-host', nova_uuid)
        children = wait_for(lambda: [
            rp for rp in self.providers().values()
            if rp['parent_provider_uuid'] == nova_uuid], timeout=30)
        self.assertEqual(1, len(children))
        self.assertEqual(nova_uuid, children[0]['root_provider_uuid'])
        self.assertEqual(2, len(self.providers()))
        wait_for(lambda: not self.sync_pending('aio-nova-host'))
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
        self.assertEqual(2, other.process.wait(60))
        # One line that names the address (after the log of its checks).
        output = other.output()
        self.assertEqual(
            'cyborg-aio: error: cannot listen on 127.0.0.1:%d: Address '
            'already in use (another process listens on it; see [api] '
            'host_ip and port)' % self.port, output.strip().splitlines()[-1])
        self.assertNotIn('Traceback', output)
        self.assertTrue(blocker.running())

    def test_second_instance_on_one_state_dir_is_refused(self):
        first = self.start()
        other = daemons.Daemon(
            self, 'aio', ['--port', str(daemons.free_port()), '--state-dir',
                          self.state_dir],
            os.path.join(self.tmp, 'other.log'))
        self.assertEqual(1, other.process.wait(60))
        self.assertIn('cyborg-aio: error: --state-dir %s: in use by process '
                      '%d' % (self.state_dir, first.process.pid),
                      other.output())
        self.assertNotIn('Traceback', other.output())
        self.assertTrue(first.running())
        # Once the first has stopped, the directory is free again.
        self.assertEqual(0, first.terminate())
        self.start()

    def test_start_and_ctrl_c_log_no_failure_and_one_stopped_line(self):
        aio = self.start()
        wait_for(lambda: len(self.providers()) == 2)
        # A second Ctrl-C while it stops says nothing more.
        aio.process.send_signal(signal.SIGINT)
        self.assertEqual(0, aio.terminate(signum=signal.SIGINT))
        lines = aio.output().splitlines()
        # Placement's version document needs no token: no 401 at start.
        self.assertEqual([], [line for line in lines
                              if 'status: 4' in line or 'status: 5' in line])
        self.assertEqual([], [line for line in lines
                              if ' ERROR ' in line or 'Traceback' in line])
        self.assertEqual(1, sum('SIGINT received' in line for line in lines))
        self.assertIn('cyborg-aio stopped', lines[-1])
