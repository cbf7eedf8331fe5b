"""``tools/bench/scale``: its figures of the boot cycle and the harness,
and a small run with the hosts played by two simulator processes."""

import importlib.machinery
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import types

import fixtures
import testtools

from cyborg.tests import services

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))
SCALE = os.path.join(TOP, 'tools', 'bench', 'scale')


def load_scale():
    loader = importlib.machinery.SourceFileLoader('bench_scale_test', SCALE)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class FiguresTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scale = load_scale()
        self.stats = self.scale.scalestats

    def test_simulator_processes(self):
        def args(value):
            return types.SimpleNamespace(sim_processes=value)
        self.assertEqual(1, self.scale.sim_processes(args(None), 50))
        self.assertEqual(1, self.scale.sim_processes(args(None), 1000))
        self.assertEqual(2, self.scale.sim_processes(args(None), 1001))
        self.assertEqual(5, self.scale.sim_processes(args(None), 5000))
        self.assertEqual(0, self.scale.sim_processes(args(0), 5000))
        self.assertEqual(3, self.scale.sim_processes(args(3), 50))

    def test_ports_of_the_range(self):
        benchlib = self.scale.benchlib
        self.useFixture(fixtures.EnvironmentVariable(benchlib.PORTS_ENV,
                                                     '23000-23999'))
        port = benchlib.free_port()
        self.assertTrue(23000 <= port <= 23999, port)
        # A port taken is not given.
        with socket.socket() as taken:
            taken.bind(('127.0.0.1', port))
            taken.listen()
            self.useFixture(fixtures.EnvironmentVariable(
                benchlib.PORTS_ENV, '%d-%d' % (port, port)))
            self.assertRaises(OSError, benchlib.free_port)

    def test_steps_and_slowest(self):
        # (began, seconds, machine busy cores, runnable threads, per
        # daemon [ms run, ms waited for a core, times put on one])
        cycles = [(100.0, 0.05, 0.5, 2, [(10, 0, 3), (0, 0, 0), (20, 1, 4)]),
                  (101.0, 0.30, 2.0, 9, [(90, 40, 9), (0, 0, 0), (30, 25, 8)]),
                  (102.0, 0.06, 1.0, 3, [(0, 0, 0), (0, 0, 0), (10, 0, 2)])]
        steps = {name: [0.01, 0.01, 0.01]
                 for name in self.scale.bootcycle.STEPS}
        steps['resolved'] = [0.02, 0.25, 0.03]
        by_step, slowest = self.stats.boot_steps(cycles, steps, slowest=2)
        self.assertEqual({'p50': 30.0, 'p99': 250.0, 'max': 250.0},
                         by_step['resolved'])
        self.assertEqual(10.0, by_step['bind']['p99'])
        self.assertEqual([300.0, 60.0], [s['ms'] for s in slowest])
        self.assertEqual(
            (1.0, 250.0, 2.0, 9, [(90, 40, 9), (0, 0, 0), (30, 25, 8)]),
            (slowest[0]['at_s'], slowest[0]['resolved'],
             slowest[0]['machine_busy_cores'], slowest[0]['runnable'],
             slowest[0]['daemon_sched']))

    def test_daemons_of_the_slowest_cycles(self):
        cycles = [(float(i), 0.05, 0.5, 2, [(10, 0, 1), (20, 2, 1)])
                  for i in range(19)]
        cycles.append((19.0, 0.5, 2.0, 9, [(30, 40, 8), (50, 60, 4)]))
        cycles.append((20.0, 0.25, 2.0, 9, [(10, 20, 4), (30, 80, 2)]))
        daemons = self.stats.boot_daemons(cycles)
        # The slowest tenth of 21 cycles: the two slowest.
        self.assertEqual([[20.0, 30.0, 6.0], [40.0, 70.0, 3.0]],
                         daemons['slowest_tenth'])
        self.assertEqual(375.0, daemons['slowest_tenth_ms'])
        self.assertEqual([[11.0, 2.9, 1.5], [21.9, 8.5, 1.2]],
                         daemons['all'])

    def test_sched_seconds_of_a_busy_thread(self):
        proclib = self.scale.proclib
        before = proclib.sched_seconds(os.getpid())
        began = time.process_time()
        while time.process_time() - began < 0.05:
            pass
        after = proclib.sched_seconds(os.getpid())
        # Run time grows by what this thread spent, in ns precision.
        self.assertGreaterEqual(after[0] - before[0], 0.045)
        self.assertGreaterEqual(after[1], before[1])
        self.assertGreaterEqual(after[2], before[2])

    def test_boots_split_by_how_busy_the_machine_was(self):
        cores = os.cpu_count()
        cycles = [(0, 0.05, 0.1, 1, []), (1, 0.40, cores, 9, []),
                  (2, 0.07, 0.2, 1, []), (3, 0.30, cores, 7, [])]
        split = self.stats.boot_by_machine(cycles)
        self.assertEqual({'n': 2, 'p50': 300.0, 'p99': 400.0},
                         split['saturated'])
        self.assertEqual({'n': 2, 'p50': 50.0, 'p99': 70.0},
                         split['not_saturated'])


class SmallRunTest(testtools.TestCase):

    def test_small_run_with_two_simulator_processes(self):
        transport = services.require(self, 'rabbit')
        database = services.require(self, 'mysql')
        result = subprocess.run(
            [sys.executable, SCALE, '--hosts', '12', '--minutes', '0.25',
             '--heartbeat-interval', '2', '--rescan-interval', '3',
             '--down-timeout', '10', '--liveness-interval', '1',
             '--sim-processes', '2', '--threads', '4', '--chart', '',
             '--db-url', database, '--transport-url', transport],
            capture_output=True, text=True, timeout=500,
            stdin=subprocess.DEVNULL)
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
        numbers = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual((12, 2), (numbers['hosts'],
                                   numbers['sim_processes']))
        self.assertEqual(0, numbers['lost_hosts'])
        self.assertEqual(0, numbers['sim_errors'])
        self.assertIsNotNone(numbers['down_detected_s'])
        # The simulator processes' CPU and heartbeats are theirs, not
        # this process's (which plays Nova) nor the daemons'.
        self.assertGreater(numbers['sim_cores'], 0)
        self.assertGreater(numbers['sim_steady_counts']['heartbeats'], 0)
        self.assertIn('late', numbers['sim_steady_counts'])
        self.assertGreater(numbers['rabbit_messages_per_s'], 0)
        # Read from the daemons' metrics: the conductors write (the
        # reports, the heartbeats' flush) and bind every boot's ARQ.
        self.assertGreater(numbers['db_statements_per_s'], 0)
        self.assertGreater(numbers['db_statements_per_s_by_kind']['select'],
                           0)
        self.assertGreater(numbers['db_writes_per_s'], 0)
        self.assertGreater(numbers['api_db_statements_per_s'], 0)
        self.assertGreater(numbers['binds_steady_by_outcome']['Bound'], 0)
        self.assertIn('applied', numbers['reports_steady_by_outcome'])
        self.assertGreater(numbers['boot_cycles'], 0)
        self.assertEqual(set(('profile', 'create', 'bind', 'resolved',
                              'event', 'delete')),
                         set(numbers['boot_steps_ms']))
        self.assertTrue(numbers['boot_slowest'])
        # The simulator runs below the daemons (the default --sim-nice
        # and --sim-idle), and this process's own collections are counted.
        self.assertEqual(19, numbers['sim_nice'])
        self.assertIs(True, numbers['sim_idle'])
        self.assertEqual({'collections', 'longest_ms'},
                         set(numbers['harness_gc']))
        self.assertGreaterEqual(numbers['machine_steal_cores'], 0)


#: Two scrapes of a conductor (``cyborg_..._total`` as prometheus_client
#: writes them).
BEFORE = '''# TYPE cyborg_db_statements_total counter
cyborg_db_statements_total{kind="select"} 10.0
cyborg_db_statements_total{kind="update"} 2.0
# TYPE cyborg_rpc_client_messages_total counter
cyborg_rpc_client_messages_total{kind="call",method="a",outcome="ok"} 1.0
# TYPE cyborg_conductor_binds_total counter
cyborg_conductor_binds_total{outcome="Bound"} 3.0
'''
AFTER = '''# TYPE cyborg_db_statements_total counter
cyborg_db_statements_total{kind="select"} 25.0
cyborg_db_statements_total{kind="update"} 2.0
cyborg_db_statements_total{kind="insert"} 4.0
# TYPE cyborg_rpc_client_messages_total counter
cyborg_rpc_client_messages_total{kind="call",method="a",outcome="ok"} 3.0
cyborg_rpc_client_messages_total{kind="cast",method="b",outcome="ok"} 5.0
# TYPE cyborg_conductor_binds_total counter
cyborg_conductor_binds_total{outcome="Bound"} 7.0
cyborg_conductor_binds_total{outcome="BindFailed"} 1.0
'''


class ScrapeTest(testtools.TestCase):
    """The benchmarks' numbers are differences of the daemons' metrics."""

    def setUp(self):
        super().setUp()
        scale = load_scale()
        self.scrape, self.stats = scale.scrape, scale.scalestats

    def test_phase_of_two_scrapes(self):
        before = {'ctl-1': self.scrape.parse(BEFORE)}
        after = {'ctl-1': self.scrape.parse(AFTER)}
        counted = self.scrape.phase(after, before)
        self.assertEqual(19, counted['statements'])
        self.assertEqual({'insert': 4, 'select': 15},
                         counted['statements_by_kind'])
        # Two more calls (each answered) and five casts.
        self.assertEqual(9, counted['rpc_messages'])
        self.assertEqual({'BindFailed': 1, 'Bound': 4},
                         counted['binds_by_outcome'])
        self.assertEqual({}, counted['reports_by_outcome'])

    def test_daemon_numbers_of_the_steady_state(self):
        nothing = self.scrape.parse('')
        before = {'metrics': {'ctl-1': self.scrape.parse(BEFORE),
                              'ctl-2': nothing, 'api': nothing},
                  'messages': {'messages': 100}}
        after = {'metrics': {'ctl-1': self.scrape.parse(AFTER),
                             'ctl-2': self.scrape.parse(BEFORE),
                             'api': self.scrape.parse(AFTER)},
                 'messages': {'messages': 110}}
        numbers = self.stats.daemon_numbers(before, after, seconds=2.0)
        # ctl-1: 19 statements, ctl-2: 12, in 2 s.
        self.assertEqual(15.5, numbers['db_statements_per_s'])
        # ctl-1's 4 inserts, ctl-2's 2 updates.
        self.assertEqual(3.0, numbers['db_writes_per_s'])
        self.assertEqual({'select': 12.5, 'insert': 2.0, 'update': 1.0},
                         numbers['db_statements_per_s_by_kind'])
        self.assertEqual(15.5, numbers['api_db_statements_per_s'])
        # The hosts' 10, ctl-1's 9, ctl-2's 2, the API's 11: in 2 s.
        self.assertEqual(16.0, numbers['rabbit_messages_per_s'])
        self.assertEqual({'BindFailed': 1, 'Bound': 7},
                         numbers['binds_steady_by_outcome'])

    def test_what_a_process_sent(self):
        from cyborg.common import metrics
        from cyborg.sim import processes
        before = processes.sent_messages()
        metrics.RPC_CLIENT.labels('bench_test', 'call', 'ok').inc(2)
        metrics.RPC_CLIENT.labels('bench_test', 'cast', 'error').inc()
        after = processes.sent_messages()
        self.assertEqual((2, 1, 5), tuple(
            after[key] - before[key] for key in ('calls', 'casts',
                                                 'messages')))
