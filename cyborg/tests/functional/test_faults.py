"""Faults of the split daemons, each made to happen where it hurts most
and every time: the conductor killed in the middle of a bind, the broker
restarted while an agent reports."""

import os
import threading

import fixtures
from oslo_utils import uuidutils
import requests

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.db import accelerator_requests as db_arqs
from cyborg.tests import base
from cyborg.tests import services
from cyborg.tests.functional import faults
from cyborg.tests.functional import glance
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_agent_rescan
from cyborg.tests.functional import nova
from cyborg.tests.functional import daemons
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs

FINAL = ('Bound', 'BindFailed')


class ConductorKilledMidBindTest(test_daemons.NovaStack, base.TestCase):
    """The fake driver holds the FPGA programming of a bind ([fake_driver]
    hold_dir); the conductor is killed with SIGKILL there and started
    again: every ARQ ends Bound or BindFailed and Nova hears of each."""

    def config(self, name, host, **sections):
        sections.setdefault('glance', {
            'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': self.conf.glance.endpoint,
            'trusted_image_owners': glance.FakeGlance.OWNER})
        sections.setdefault('fake_driver', {'hold_dir': self.hold_dir})
        return super().config(name, host, **sections)

    def setUp(self):
        super().setUp()
        self.hold_dir = os.path.join(self.tmp, 'hold')
        os.mkdir(self.hold_dir)
        self.glance = glance.FakeGlance().start(self)
        self.image = self.glance.add(data=b'bitstream')

    def held(self):
        return [n for n in os.listdir(self.hold_dir) if n.startswith('held')]

    def arqs(self, profile, count):
        """``count`` ARQs of ``profile``, as Nova creates them."""
        response = requests.post(self.base + nova.ARQS, timeout=30,
                                 headers=nova.USER_AND_SERVICE,
                                 json={'device_profile_name': profile})
        self.assertEqual(201, response.status_code, response.text)
        return [arq['uuid'] for arq in response.json()['arqs']]

    def bind(self, uuids, rp_uuid, instance):
        return requests.patch(
            self.base + nova.ARQS, timeout=120,
            headers=nova.USER_AND_SERVICE,
            json={uuid: [{'op': 'add', 'path': path, 'value': value}
                         for path, value in (
                             ('/hostname', self.hostname),
                             ('/device_rp_uuid', rp_uuid),
                             ('/instance_uuid', instance))]
                  for uuid in uuids})

    def bind_ignoring_the_answer(self, *args):
        try:
            self.bind(*args)
        except requests.RequestException:
            pass  # the API stopped first

    def programming_profile(self):
        name = 'program-%s' % os.path.basename(self.tmp)[-6:]
        group = {'resources:FPGA': '1',
                 'trait:CUSTOM_FAKE_DEVICE': 'required',
                 'accel:bitstream_id': self.image['id']}
        response = requests.post(
            self.base + '/v2/device_profiles', timeout=30,
            headers={'X-Auth-Token': 'admin'},
            json=[{'name': name, 'groups': [group, dict(group)]}])
        self.assertEqual(201, response.status_code, response.text)
        return name

    def logs(self):
        """The tails of the daemons' logs, for a failure's message."""
        tails = []
        for name in sorted(os.listdir(self.tmp)):
            if name.endswith('.log'):
                with open(os.path.join(self.tmp, name)) as f:
                    tails.append('== %s\n%s' % (name, f.read()[-3000:]))
        return '\n'.join(tails)

    def states(self, uuids):
        return [db_arqs.get(self.ctx, uuid).state for uuid in uuids]

    def test_every_arq_ends_bound_or_failed_and_nova_is_told(self):
        rp_uuid, _plain = self.start_stack()
        profile = self.programming_profile()
        uuids = self.arqs(profile, 2)
        instance = uuidutils.generate_uuid()
        # Nova's bind waits for the conductor: it is left to the API, which
        # answers it once its call times out or the test ends.
        threading.Thread(target=self.bind_ignoring_the_answer,
                         args=(uuids, rp_uuid, instance), daemon=True).start()
        try:
            wait_for(self.held, timeout=60)
        except AssertionError:
            raise AssertionError(
                'no programming was held:\n' + self.logs()) from None
        self.assertEqual(['BindStarted'] * 2, self.states(uuids))
        self.conductor.kill()
        self.conductor = self.start('conductor', 'ctl-1')
        # Its successor fails the binds it left, and tells Nova.
        wait_for(lambda: all(s in FINAL for s in self.states(uuids)),
                 timeout=60)
        events = self.nova.wait_events(instance, len(uuids), timeout=60)
        self.assertEqual(sorted(uuids), sorted(e['tag'] for e in events))
        status = {'Bound': 'completed', 'BindFailed': 'failed'}
        self.assertEqual(
            sorted((u, 'accelerator-request-bound', status[s])
                   for u, s in zip(uuids, self.states(uuids), strict=True)),
            sorted((e['tag'], e['name'], e['status']) for e in events))
        wait_for(lambda: all(db_arqs.get(self.ctx, u).nova_notified
                             for u in uuids), timeout=30)
        # The programming the agent was held in finishes; nothing of it
        # changes the ARQs, and the next bind goes through.
        with open(os.path.join(self.hold_dir, fake_driver.RELEASE), 'w'):
            pass
        again = self.arqs(profile, 2)
        other = uuidutils.generate_uuid()
        response = self.bind(again, rp_uuid, other)
        self.assertEqual(202, response.status_code, response.text)
        self.assertEqual(['Bound'] * 2, self.states(again))
        self.assertEqual(
            sorted((u, 'completed') for u in again),
            sorted((e['tag'], e['status'])
                   for e in self.nova.wait_events(other, 2, timeout=60)))
        self.assertTrue(all(s in FINAL for s in self.states(uuids)))


def _tree(pid):
    """``pid`` and its descendants, with their names."""
    found = {}
    pending = [pid]
    while pending:
        pid = pending.pop()
        try:
            with open('/proc/%d/comm' % pid) as f:
                found[pid] = f.read().strip()
            pending.extend(daemons.children(pid))
        except FileNotFoundError:
            pass
    return found


def _running(pid):
    """Whether ``pid`` is a process that has not exited (not a zombie)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rpartition(')')[2].split()[0] != 'Z'
    except FileNotFoundError:
        return False


class PrivateRabbitTest(base.TestCase):
    """Neither kill() nor the test's cleanup leaves a process of a private
    RabbitMQ node running, though rabbitmq-server, run as root, puts the
    node in a session of its own, out of reach of a process group kill.
    Skipped where no private node can be started, or fails under
    CYBORG_TEST_REQUIRE_SERVICES."""

    def start(self, rabbit):
        if rabbit.problem is None:
            rabbit.start()
        if rabbit.problem is not None:
            services.unavailable(self, rabbit.problem)
        tree = _tree(rabbit.daemon.process.pid)
        self.assertIn('beam.smp', tree.values())
        self.assertTrue(rabbit.answers())
        return tree

    def assertGone(self, rabbit, tree):
        self.assertEqual([], [(pid, name) for pid, name in tree.items()
                              if _running(pid)])
        self.assertEqual([], rabbit.node_pids())
        self.assertFalse(rabbit.answers())

    def test_kill_and_cleanup_leave_no_process_of_the_node(self):
        # The node's owner, cleaned up below as a test that failed before
        # kill() would be (and by this test's cleanup if it fails first).
        owner = self.useFixture(fixtures.Fixture())
        rabbit = faults.PrivateRabbit(owner)
        tree = self.start(rabbit)
        rabbit.kill()
        self.assertGone(rabbit, tree)
        # Started again on the same ports, as after a crash.
        tree = self.start(rabbit)
        owner.cleanUp()
        owner.setUp()
        self.assertGone(rabbit, tree)


class BrokerRestartTest(test_agent_rescan.InventoryView,
                        test_daemons.SysfsDaemons, base.TestCase):
    """A RabbitMQ node of the test's own is killed and started again while
    the agent has a new device to report: conductor and agent reconnect,
    and the database and Placement show the host's hardware. Where no
    private node can be started it is skipped with the reason, or fails
    under CYBORG_TEST_REQUIRE_SERVICES (it needs no shared server but
    MariaDB)."""

    backend = 'mysql'
    enabled_drivers = 'nvidia_gpu_driver'

    def broker_url(self):
        self.rabbit = faults.PrivateRabbit.started(self)
        return self.rabbit.url

    def test_agent_and_conductor_reconnect_and_inventory_is_right(self):
        self.placement = self.useFixture(placement_fixture.Placement(
            self.conf))
        self.tree = sysfs.SysfsTree(os.path.join(self.tmp, 'sys'))
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.host = 'cmp-%s' % os.path.basename(self.tmp)[-8:]
        self.root = self.placement.create_compute_node(self.host)
        conductor = self.start('conductor', 'ctl-1')
        agent = self.start('agent', self.host)
        wait_for(lambda: self.shows(['0000:3b:00.0']), timeout=60)
        self.rabbit.kill()
        # A device the agent finds while the broker is away.
        self.tree.add_card('tesla_t4', '0000:5e:00.0')
        self.assertTrue(self.rabbit.start(), self.rabbit.problem)
        try:
            wait_for(lambda: self.shows(['0000:3b:00.0', '0000:5e:00.0']),
                     timeout=90)
        except AssertionError:
            raise AssertionError('the new device was not shown:\n%s\n%s' % (
                agent.output()[-4000:], conductor.output()[-3000:])) from None
        self.assertTrue(conductor.running())
        self.assertTrue(agent.running())
        # Silent longer than host_down_timeout while the broker was away,
        # the host may have been marked down: a heartbeat brings it back.
        wait_for(lambda: self.status(self.host) == 'up', timeout=30)
