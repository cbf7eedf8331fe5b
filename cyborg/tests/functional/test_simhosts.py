"""The simulator of ``tools/bench/scale`` itself
(:mod:`cyborg.sim`): what its checks keep, and its
hosts played by several processes on a real conductor."""

import collections
import os
import signal
import threading

import fixtures
import oslo_messaging as messaging

from cyborg.agent import reporter
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.sim import hosts as simhosts
from cyborg.sim import processes as sim_processes
from cyborg.tests import base
from cyborg.tests import conductor_versions
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for

# Waits for what must happen, on a loaded machine.
SETTLE = 120


class _Unused:
    """A conductor no test here reaches."""

    def __getattr__(self, name):
        raise AssertionError('the conductor was called: %s' % name)


class _Stuck(conductor_versions.RPCVersions):
    """A conductor that never answers a hello (until ``release``), and
    counts heartbeats."""

    def __init__(self):
        self.release = threading.Event()
        self.heartbeats = collections.Counter()

    def agent_hello(self, context, hello, timeout=None):
        self.release.wait()
        raise messaging.MessagingTimeout('no answer')

    def agent_heartbeat(self, context, hostname):
        self.heartbeats[hostname] += 1

    def report_data(self, context, hostname, devices, report_hash,
                    report_seq=None, hardware=None, timeout=None):
        self.release.wait()
        raise messaging.MessagingTimeout('no answer')


class SimHostsTest(base.TestCase):
    """One process's hosts, without a broker: nothing here sends."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.key_dir = os.path.join(self.tmp, 'keys')
        os.makedirs(self.key_dir)

    def sim(self, hostnames, **kwargs):
        sim = simhosts.SimHosts(self.conf, hostnames, self.key_dir,
                                state_dir=self.tmp, conductor=_Unused(),
                                **kwargs)
        self.addCleanup(sim.stop)
        return sim

    def test_kept_hash_follows_the_cards(self):
        sim = self.sim(['h-%d' % i for i in range(5)])
        host = sim.hosts['h-3']  # benchlib-style cards: two of them
        before = host.report_hash()
        self.assertEqual(len(host.deployables()), host.deployable_count())
        self.assertEqual(2, host.deployable_count())
        host.toggle_card(sim.rng)
        # A card more: a new hash and count, as a fresh survey gives.
        devices, hardware = host.survey()
        self.assertNotEqual(before, host.report_hash())
        self.assertEqual(reporter.report_hash(devices, hardware),
                         host.report_hash())
        self.assertEqual(3, host.deployable_count())
        self.assertEqual(len(host.deployables()), host.deployable_count())
        host.toggle_card(sim.rng)
        host.toggle_card(sim.rng)
        self.assertEqual(len(host.deployables()), host.deployable_count())
        self.assertEqual(sum(len(n) for n in sim.deployables().values()),
                         sim.wanted())

    def test_hellos_hold_no_heartbeat_back(self):
        conductor = _Stuck()
        names = ['h-%d' % i for i in range(6)]
        sim = simhosts.SimHosts(
            self.conf, names, self.key_dir, state_dir=self.tmp,
            conductor=conductor, heartbeat_interval=0.2,
            rescan_interval=3600, change_interval=0, steady_threads=2)
        self.addCleanup(sim.stop)
        # First: the hellos end, then the pools.
        self.addCleanup(conductor.release.set)
        # Two hosts registered; four wait for answers, more than the
        # pool's two threads: three for their hellos', one for its report
        # sent again.
        for name in names[:2] + names[-1:]:
            host = sim.hosts[name]
            host.reporter._registered.set()
            # Their hardware taken: a rescan sends nothing.
            host.reporter.accepted_hash = host.report_hash()
        waiting = sim.hosts[names[-1]]
        waiting.reporter._pending = (waiting.report_hash(),
                                     waiting.survey()[0], None)
        self.assertEqual([False, False, True, True, True, True],
                         [sim.hosts[n].waits() for n in names])
        sim.start()
        wait_for(lambda: min(conductor.heartbeats[n] for n in names[:2])
                 >= 3, timeout=SETTLE)
        self.assertEqual(set(names[:2]), set(conductor.heartbeats))

    def test_slices_keep_their_variants(self):
        names = ['h-%d' % i for i in range(7)]
        whole = self.sim(names)
        part = self.sim(names[3:], first_index=3)
        self.assertEqual(
            [whole.hosts[n].variant.name for n in names[3:]],
            [part.hosts[n].variant.name for n in names[3:]])

    def test_state(self):
        sim = self.sim(['h-%d' % i for i in range(4)])
        sim.kill('h-1')
        state = sim.state(names=2)
        # Nothing registered yet: every live host is out of sync.
        self.assertEqual(3, state['out_of_sync'])
        self.assertEqual(['h-0', 'h-2'], state['out_of_sync_names'])
        self.assertEqual(sim.wanted(), state['wanted'])
        self.assertEqual(0, state['counts']['heartbeats'])
        self.assertGreater(state['cpu_s'], 0)
        self.assertIsNone(sim.last_beat('h-0'))
        self.assertEqual((0, 0.0), (state['counts']['delayed'],
                                    state['delay_max_s']))

    def test_delayed_heartbeats(self):
        sim = self.sim(['h-0'])
        sim._delayed(0.2)
        sim._delayed(simhosts.DELAYED_S + 0.5)
        sim._delayed(0.1)
        state = sim.state()
        self.assertEqual(1, state['counts']['delayed'])
        self.assertEqual(simhosts.DELAYED_S + 0.5, state['delay_max_s'])
        sim.reset_delay_max()
        self.assertEqual(0.0, sim.state()['delay_max_s'])
        self.assertEqual(1, sim.state()['counts']['delayed'])

    def test_a_host_has_one_heartbeat_queued_at_most(self):
        # Two hosts whose hellos wait, on a hello pool of one thread: one
        # hello runs, and each host has at most one more heartbeat
        # waiting in the pool however many intervals go by, as an agent
        # whose periodic task overran.
        conductor = _Stuck()
        sim = simhosts.SimHosts(
            self.conf, ['h-0', 'h-1'], self.key_dir, state_dir=self.tmp,
            conductor=conductor, heartbeat_interval=0.02,
            rescan_interval=3600, change_interval=0, steady_threads=1)
        self.addCleanup(sim.stop)
        self.addCleanup(conductor.release.set)
        sim.start()
        wait_for(lambda: sim.state()['counts']['coalesced'] >= 20,
                 timeout=SETTLE)
        self.assertLessEqual(sim.hello_pool._work_queue.qsize(), 2)
        self.assertEqual({'_heartbeat'}, sim.hosts['h-1'].queued)
        # Answered: what waited runs, and the scheduler queues again.
        conductor.release.set()
        wait_for(lambda: sim.state()['counts']['heartbeats'] >= 10,
                 timeout=SETTLE)
        self.assertLessEqual(sim.hello_pool._work_queue.qsize(), 2)

    def test_a_late_task_does_not_catch_up(self):
        # On time: an interval on.
        self.assertEqual(110, simhosts.next_due(100, 10, 105))
        # Behind by several intervals: an interval from now, not "now"
        # (which ran the task back to back until it caught up).
        self.assertEqual(165, simhosts.next_due(100, 10, 155))
        self.assertEqual(120, simhosts.next_due(100, 10, 110))


class SimHostProcessesTest(test_daemons._Daemons, base.TestCase):
    """Hosts played by two processes, on a conductor process, RabbitMQ,
    MariaDB and the real Placement."""

    backend = 'mysql'

    def config(self, name, host, **sections):
        sections.setdefault('placement', {
            'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': self.placement.endpoint})
        sections.setdefault('conductor', {'host_down_timeout': 10,
                                          'heartbeat_flush_interval': 1,
                                          'liveness_check_interval': 1})
        return super().config(name, host, **sections)

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(600, gentle=True))
        self.placement = self.useFixture(
            placement_fixture.Placement(self.conf))
        rpc.register_opts(self.conf)
        self.flags(transport_url=self.transport_url,
                   rpc_topic_prefix='test-%s-' % os.path.basename(self.tmp))
        self.flags(key_dir=self.key_dir, group='security')
        os.makedirs(self.key_dir, exist_ok=True)
        # Plays compute hosts: a guest on the broker, as agents are.
        rpc.init(self.conf, keys.KeyStore(self.key_dir),
                 identity=keys.API)
        self.addCleanup(rpc.cleanup)
        tag = os.path.basename(self.tmp)[-6:]
        self.hostnames = ['simp-%s-%d' % (tag, i) for i in range(6)]

    def test_two_processes_play_the_hosts(self):
        self.start('conductor', 'ctl-1')
        for hostname in self.hostnames:
            self.placement.create_compute_node(hostname)
        sim = sim_processes.SimHostProcesses(
            self.conf, self.hostnames, self.key_dir, self.tmp, processes=2,
            heartbeat_interval=1, rescan_interval=2, change_interval=0,
            threads=4, nice=3, idle=True)
        self.addCleanup(sim.stop)
        pids = [child.process.pid for child in sim.children]
        self.assertEqual(2, len(set(pids)))
        self.assertNotIn(os.getpid(), pids)
        # At a lower priority than this process (which started them).
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        self.assertEqual([min(mine + 3, 19)] * 2,
                         [os.getpriority(os.PRIO_PROCESS, p) for p in pids])
        self.assertEqual([os.SCHED_IDLE] * 2,
                         [os.sched_getscheduler(p) for p in pids])
        sim.boot()
        wait_for(lambda: sim.state()['out_of_sync'] == 0, timeout=SETTLE)
        # Every host is up, in its own name (each signs with its own key).
        wait_for(lambda: all(self.status(h) == 'up'
                             for h in self.hostnames), timeout=SETTLE)
        # The same hardware as one process gives the same hosts.
        one = simhosts.SimHosts(self.conf, self.hostnames, self.key_dir,
                                state_dir=os.path.join(self.tmp, 'one'),
                                conductor=_Unused())
        self.addCleanup(one.stop)
        self.assertEqual(one.wanted(), sim.wanted())
        wait_for(lambda: sim.counts['heartbeats'] >= 12, timeout=SETTLE)
        state = sim.state()
        self.assertEqual(2, state['processes'])
        self.assertGreater(state['cpu_s'], 0)
        # A hello and a report (calls) per host, then heartbeats (casts).
        self.assertGreaterEqual(state['messages']['calls'], 12)
        self.assertGreater(state['messages']['casts'], 0)
        self.assertEqual(0, state['counts']['errors'])
        self.assertIn('delayed', state['counts'])
        self.assertGreaterEqual(state['delay_max_s'], 0)
        sim.reset_delay_max()

        # A host killed in the second process goes silent and down; the
        # others stay up.
        dead = self.hostnames[-1]
        sim.kill(dead)
        self.assertIsNotNone(sim.last_beat(dead))
        wait_for(lambda: self.status(dead) == 'down', timeout=SETTLE)
        self.assertEqual(['up'] * 5, [self.status(h)
                                      for h in self.hostnames[:-1]])

        # A process that dies is an error, not a hang.
        os.kill(pids[0], signal.SIGKILL)
        sim.children[0].process.wait()
        self.assertRaises(RuntimeError, sim.state)
        sim.stop()
        self.assertIsNotNone(sim.children[1].process.poll())
