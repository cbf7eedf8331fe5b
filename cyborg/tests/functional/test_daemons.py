"""cyborg-conductor and cyborg-agent as separate processes on RabbitMQ and
a real database, the way a deployment runs them."""

import json
import os
import time

import fixtures
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
import openstack
from oslo_utils import timeutils
from oslo_utils import uuidutils
import requests
import sqlalchemy as sa

from cyborg.common import context
from cyborg.common import keys
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional import nova
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_agent_rescan
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs


class _Daemons:

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.transport_url = self.broker_url()
        self.db = self.useFixture(cyborg_fixtures.Database(
            self, self.backend, schema=self.schema))
        self.ctx = context.get_admin_context()

    schema = 'migrations'

    def broker_url(self):
        """The broker the daemons use: the shared RabbitMQ."""
        return services.require(self, 'rabbit')

    def config(self, name, host, **sections):
        values = {
            'DEFAULT': {'host': host, 'transport_url': self.transport_url,
                        'rpc_topic_prefix': 'test-%s-' % os.path.basename(
                            self.tmp),
                        # The agent's state file stays in the test's
                        # directory.
                        'state_path': self.tmp},
            'database': {'connection': self.db.url},
            # One state file per host: an agent locks its own.
            'agent': {'heartbeat_interval': 1,
                      'state_file': os.path.join(
                          self.tmp, 'agent-state-%s.json' % host)},
            'conductor': {'host_down_timeout': 3,
                          'liveness_check_interval': 1},
            # Each daemon's keys, made as an operator makes them.
            'security': {'key_dir': self.key_dir},
        }
        for section, options in sections.items():
            values.setdefault(section, {}).update(options)
        return daemons.write_config(os.path.join(self.tmp, name), values)

    @property
    def key_dir(self):
        return os.path.join(self.tmp, 'keys')

    def start(self, name, host):
        for identity in (keys.API, keys.host_identity(host)):
            keys.create(self.key_dir, identity)
        config = self.config('%s-%s.conf' % (name, host), host)
        return daemons.Daemon(self, name, ['--config-file', config],
                              os.path.join(self.tmp, '%s-%s.log' % (name,
                                                                   host)))

    def status(self, hostname):
        try:
            return db_hosts.get_by_hostname(self.ctx, hostname)[0].status
        except Exception:
            return None


class _LivenessTests(_Daemons):

    def test_agent_registers_and_liveness_follows_it(self):
        conductor = self.start('conductor', 'ctl-1')
        agent = self.start('agent', 'cmp-1')
        wait_for(lambda: self.status('cmp-1') == 'up', timeout=30)
        # Each serves from one process: no launcher forks a worker.
        self.assertEqual([], daemons.children(conductor.process.pid))
        self.assertEqual([], daemons.children(agent.process.pid))
        agent.kill()
        wait_for(lambda: self.status('cmp-1') == 'down', timeout=30)
        self.assertTrue(conductor.running())
        self.start('agent', 'cmp-1')
        wait_for(lambda: self.status('cmp-1') == 'up', timeout=30)
        self.assertIsNotNone(conductor.terminate())
        self.assertIn('cmp-1', conductor.output())


    def test_a_second_agent_for_a_live_host_is_refused(self):
        """Two agents with one [DEFAULT] host (each with its own
        configuration and state file): the second is told, says so in
        one line and exits 1; the first keeps the host."""
        conductor = self.start('conductor', 'ctl-1')
        first = self.start('agent', 'cmp-1')
        wait_for(lambda: self.status('cmp-1') == 'up', timeout=30)
        config = self.config('agent-cmp-1-again.conf', 'cmp-1', agent={
            'state_file': os.path.join(self.tmp, 'other-state.json')})
        second = daemons.Daemon(self, 'agent', ['--config-file', config],
                                os.path.join(self.tmp, 'agent-again.log'))
        self.assertEqual(1, second.process.wait(60), second.output())
        refused = [line for line in second.output().splitlines()
                   if 'ERROR' in line]
        self.assertEqual(1, len(refused), second.output())
        self.assertIn('The conductor refused this agent: Host cmp-1 is '
                      'held by agent', refused[0])
        warned = [line for line in conductor.output().splitlines()
                  if 'Refused the hello of a second agent' in line]
        self.assertEqual(1, len(warned), conductor.output())
        self.assertIn(os.path.join(self.tmp, 'other-state.json'), warned[0])
        self.assertTrue(first.running())
        self.assertEqual('up', self.status('cmp-1'))


class DaemonsMySQLTest(_LivenessTests, base.TestCase):
    backend = 'mysql'


class DaemonsPostgreSQLTest(_LivenessTests, base.TestCase):
    backend = 'postgresql'


class APIOnMariaDBTest(_Daemons, base.TestCase):
    """cyborg-api's own connections to the database are set up as the
    conductor's (``db_api.configure``): utf8mb4, pings only after idle."""

    backend = 'mysql'

    def config(self, name, host, **sections):
        sections.setdefault('api', {'host_ip': '127.0.0.1',
                                    'port': self.api_port,
                                    'api_workers': 1})
        sections.setdefault('DEFAULT', {}).update(auth_strategy='noauth')
        # As operators write it: no charset in the URL.
        sections.setdefault('database', {
            'connection': sa.engine.make_url(self.db.url)
            .difference_update_query(['charset'])
            .render_as_string(hide_password=False)})
        return super().config(name, host, **sections)

    def test_four_byte_characters_read_back_as_written(self):
        # Written as the conductor writes (utf8mb4); over a utf8 (three
        # byte) connection MariaDB would answer "?" for the rocket.
        description = 'for \U0001F680 workloads'
        with self.db.engine.begin() as connection:
            connection.execute(models.DeviceProfile.__table__.insert().values(
                uuid=uuidutils.generate_uuid(), name='rocket',
                profile_json=json.dumps(
                    {'groups': [{'resources:FPGA': '1'}]}),
                description=description, created_at=timeutils.utcnow()))
        self.api_port = daemons.free_port()
        base_url = 'http://127.0.0.1:%d' % self.api_port
        api = self.start('api', 'api-1')
        daemons.wait_for_http(base_url + '/v2', daemon=api)
        response = requests.get(
            base_url + '/v2/device_profiles?name=rocket', timeout=30,
            headers={'X-Auth-Token': 'admin'})
        self.assertEqual(200, response.status_code, response.text)
        [profile] = response.json()['device_profiles']
        self.assertEqual(description, profile['description'])


class NovaStack(_Daemons):
    """cyborg-api, cyborg-conductor and cyborg-agent as separate processes
    on RabbitMQ and MariaDB, with the real Placement and a stand-in Nova
    that records the events."""

    backend = 'mysql'

    def config(self, name, host, **sections):
        sections.setdefault('placement', {
            'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': self.placement.endpoint})
        sections.setdefault('nova', self.nova.config())
        sections.setdefault('api', {'host_ip': '127.0.0.1',
                                    'port': self.api_port,
                                    'api_workers': 1})
        sections.setdefault('DEFAULT', {}).update(auth_strategy='noauth')
        return super().config(name, host, **sections)

    def deployables(self):
        response = requests.get(self.base + '/v2/deployables', timeout=10,
                                headers={'X-Auth-Token': 'admin'})
        self.assertEqual(200, response.status_code, response.text)
        return [d for d in response.json()['deployables'] if d['rp_uuid']]

    def start_stack(self):
        """Placement, a stand-in Nova, cyborg-conductor, cyborg-api and
        the agent of a host; returns (its first provider, a profile)."""
        self.placement = self.useFixture(placement_fixture.Placement(
            self.conf))
        self.nova = nova.StandInNova().start(self)
        self.api_port = daemons.free_port()
        self.base = 'http://127.0.0.1:%d' % self.api_port
        self.hostname = 'cmp-%s' % os.path.basename(self.tmp)[-8:]
        # Nova made the compute node provider the devices hang under.
        self.placement.create_compute_node(self.hostname)
        self.conductor = self.start('conductor', 'ctl-1')
        api = self.start('api', 'api-1')
        self.start('agent', self.hostname)
        daemons.wait_for_http(self.base + '/v2', daemon=api)
        wait_for(self.deployables, timeout=60)
        profile = 'daemons-%s' % os.path.basename(self.tmp)[-6:]
        response = requests.post(
            self.base + '/v2/device_profiles', timeout=30,
            headers={'X-Auth-Token': 'admin'},
            json=[{'name': profile, 'groups': [{
                'resources:FPGA': '1',
                'trait:CUSTOM_FAKE_DEVICE': 'required'}]}])
        self.assertEqual(201, response.status_code, response.text)
        return self.deployables()[0]['rp_uuid'], profile


class NovaBootOnDaemonsTest(NovaStack, base.TestCase):
    """Nova's boot sequence against the daemons."""

    def test_nova_boot_sequence(self):
        rp_uuid, profile = self.start_stack()
        hostname = self.hostname

        # openstacksdk's accelerator proxy sees what the agent reported.
        sdk = openstack.connection.Connection(
            session=ks_session.Session(auth=token_endpoint.Token(
                self.base, 'admin')),
            accelerator_endpoint_override=self.base).accelerator
        self.assertEqual([d['name'] for d in self.deployables()],
                         [d.name for d in sdk.deployables()])
        self.assertIn(profile, [p.name for p in sdk.device_profiles()])

        instance, bound = nova.boot_and_delete(self, self.base, profile,
                                               hostname, rp_uuid,
                                               nova=self.nova)

        self.assertEqual(hostname, bound[0]['hostname'])
        self.assertEqual(rp_uuid, bound[0]['device_rp_uuid'])
        self.assertEqual(
            sorted(arq['uuid'] for arq in bound),
            sorted(e['tag'] for e in self.nova.events_of(instance)))
        for event in self.nova.events_of(instance):
            self.assertEqual(('accelerator-request-bound', 'completed'),
                             (event['name'], event['status']))

    def test_a_killed_conductor_leaves_no_event_unsent(self):
        rp_uuid, profile = self.start_stack()
        arqs_url = self.base + nova.ARQS
        [arq] = requests.post(arqs_url, timeout=30,
                              headers=nova.USER_AND_SERVICE,
                              json={'device_profile_name': profile}
                              ).json()['arqs']
        instance = uuidutils.generate_uuid()
        # Nova holds the event's request: the bind is answered anyway.
        self.nova.gate.clear()
        response = requests.patch(arqs_url, timeout=30,
                                  headers=nova.USER_AND_SERVICE,
                                  json={arq['uuid']: [
                                      {'op': 'add', 'path': path,
                                       'value': value}
                                      for path, value in (
                                          ('/hostname', self.hostname),
                                          ('/device_rp_uuid', rp_uuid),
                                          ('/instance_uuid', instance))]})
        self.assertEqual(202, response.status_code, response.text)
        self.nova.wait(lambda: self.nova.held == 1)
        # The conductor dies before it hears Nova took the event.
        self.conductor.kill()
        self.nova.gate.set()
        stored = db_arqs.get(self.ctx, arq['uuid'])
        self.assertEqual(('Bound', False),
                         (stored.state, stored.nova_notified))
        # Its successor sends it again as it starts, and remembers.
        self.start('conductor', 'ctl-1')
        self.nova.wait_events(instance, 2, timeout=60)
        wait_for(lambda: db_arqs.get(self.ctx, arq['uuid']).nova_notified,
                 timeout=30)
        self.assertEqual([(arq['uuid'], 'completed')] * 2,
                         [(e['tag'], e['status'])
                          for e in self.nova.events_of(instance)])


class SysfsDaemons(_Daemons):
    """Daemons whose agent reads the captured tree ``self.tree`` with
    ``enabled_drivers``, each second, and whose conductor uses the real
    Placement ``self.placement``."""

    enabled_drivers = 'nvidia_gpu_driver,intel_qat_driver'

    def config(self, name, host, **sections):
        sections.setdefault('placement', {
            'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': self.placement.endpoint})
        sections.setdefault('agent', {
            'heartbeat_interval': 1, 'rescan_interval': 1,
            'sysfs_root': self.tree.root,
            'enabled_drivers': self.enabled_drivers})
        return super().config(name, host, **sections)


class AgentRescanOnDaemonsTest(test_agent_rescan.InventoryView, SysfsDaemons,
                               base.TestCase):
    """cyborg-agent on a captured sysfs tree and cyborg-conductor as
    processes, on RabbitMQ and MariaDB with the real Placement: the tree
    edited under the running agent reaches the database and Placement,
    and a restarted agent sends no report for an unchanged host."""

    backend = 'mysql'

    def test_tree_edits_and_restart(self):
        self.placement = self.useFixture(placement_fixture.Placement(
            self.conf))
        self.tree = sysfs.SysfsTree(os.path.join(self.tmp, 'sys'))
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('qat_c62x', '0000:3d:00.0')
        self.host = 'cmp-%s' % os.path.basename(self.tmp)[-8:]
        self.root = self.placement.create_compute_node(self.host)
        self.start('conductor', 'ctl-1')
        agent = self.start('agent', self.host)
        wait_for(lambda: self.shows(['0000:3b:00.0', '0000:3d:00.0']),
                 timeout=60)
        self.tree.add_card('tesla_t4', '0000:5e:00.0')
        wait_for(lambda: self.shows(['0000:3b:00.0', '0000:3d:00.0',
                                    '0000:5e:00.0']), timeout=30)
        self.tree.remove('0000:3d:00.0')
        wait_for(lambda: self.shows(['0000:3b:00.0', '0000:5e:00.0']),
                 timeout=30)
        # One report each: at start, and after each edit.
        wait_for(lambda: agent.output().count('Reported ') == 3)
        self.assertEqual(0, agent.terminate())
        generation = db_hosts.get_by_hostname(
            self.ctx, self.host)[0].report_generation

        again = self.start('agent', self.host)
        wait_for(lambda: 'Registered with the conductor' in again.output(),
                 timeout=60)
        # Two rescans and heartbeats later: nothing was reported.
        time.sleep(2.5)
        self.assertNotIn('Reported ', again.output())
        self.assertEqual(generation, db_hosts.get_by_hostname(
            self.ctx, self.host)[0].report_generation)
        self.assertTrue(self.shows(['0000:3b:00.0', '0000:5e:00.0']))


class ConductorRefusesOldSchemaTest(base.TestCase):

    def test_empty_database_is_refused_with_the_fix(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        config = daemons.write_config(os.path.join(tmp, 'c.conf'), {
            'DEFAULT': {'transport_url': 'fake:/'},
            'database': {'connection': 'sqlite:///%s/empty.sqlite' % tmp}})
        conductor = daemons.Daemon(self, 'conductor',
                                   ['--config-file', config],
                                   os.path.join(tmp, 'c.log'))
        self.assertNotEqual(0, conductor.process.wait(60))
        self.assertIn('cyborg-dbsync upgrade', conductor.output())
