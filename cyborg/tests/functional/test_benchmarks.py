"""The benchmarks in tools/bench/ run, on a small inventory, and print
the numbers they promise; the real runs are in doc/source/admin."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import testtools

from cyborg.tests import benchtools
from cyborg.tests import services

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))


def run_bench(test, name, *args):
    """The JSON object a benchmark prints last."""
    result = subprocess.run(
        [sys.executable, os.path.join(TOP, 'tools', 'bench', name), *args],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    test.assertEqual(0, result.returncode, result.stdout + result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


class APIBenchmarkTest(testtools.TestCase):

    def test_small_run(self):
        numbers = run_bench(self, 'api', '--deployables', '20', '--lists',
                            '3', '--window', '0.5', '--cycles', '6',
                            '--concurrency', '2')
        self.assertEqual(20, numbers['deployables'])
        self.assertEqual(3, numbers['list']['n'])
        self.assertEqual(3, numbers['cycle_sequential']['n'])
        self.assertEqual(6, numbers['cycle_concurrent']['n'])
        self.assertEqual(0, numbers['cycle_concurrent_errors'])
        self.assertGreater(numbers['lists_per_s'], 0)
        for key in ('p50_ms', 'p99_ms'):
            self.assertGreater(numbers['list'][key], 0)
            self.assertGreater(numbers['cycle_concurrent'][key], 0)
        # Its Nova got one event per boot (one ARQ each), in no more
        # requests than boots.
        self.assertEqual((9, 9), (numbers['booted'], numbers['nova_events']))
        self.assertLessEqual(numbers['nova_event_posts'], 9)
        self.assertGreater(numbers['cycle_sequential_server_cpu_ms'], 0)
        # Nova's whole sequence, the profile's GET by name included.
        self.assertIn('profile', numbers['cycle_sequential_steps_p50_ms'])
        # Read from the server's metrics: every boot reads and writes the
        # database; each ARQ was bound once.
        self.assertMetricsCounted(numbers, boots=(3, 6))

    def assertMetricsCounted(self, numbers, boots):
        self.assertGreater(numbers['statements_per_boot'], 0)
        self.assertEqual(numbers['statements_per_boot'],
                         numbers['cycle_sequential_statements_per_boot'])
        for name, count in zip(('sequential', 'concurrent'), boots,
                               strict=True):
            kinds = numbers['cycle_%s_statements_per_boot_by_kind' % name]
            self.assertGreater(kinds['select'], 0, name)
            self.assertGreater(kinds['insert'], 0, name)
            self.assertEqual({'Bound': count},
                             numbers['cycle_%s_binds_by_outcome' % name])

    def test_small_run_of_the_all_in_one(self):
        # cyborg-aio as the README starts it: its own agent's device, its
        # embedded Placement, events to the benchmark's Nova.
        numbers = run_bench(self, 'api', '--aio', '--lists', '0',
                            '--cycles', '4', '--concurrency', '2')
        self.assertEqual(('cyborg-aio', 'sqlite', 0), (
            numbers['server'], numbers['database'],
            numbers['cycle_concurrent_errors']))
        self.assertEqual((6, 6), (numbers['booted'], numbers['nova_events']))
        self.assertGreater(numbers['cycle_concurrent_server_cpu_ms'], 0)
        self.assertMetricsCounted(numbers, boots=(2, 4))

    def test_beside_another_deployment_taking_turns(self):
        # Another cyborg-aio stands in for upstream's reference: each
        # phase runs in two rounds on each, and the ratios are printed.
        apideploy = benchtools.load('apideploy.py')
        with tempfile.TemporaryDirectory() as tmp:
            server, ready = apideploy.start_aio(
                argparse.Namespace(metrics=False, db_url=None), None, tmp)
            try:
                numbers = run_bench(
                    self, 'api', '--aio', '--lists', '0', '--cycles', '8',
                    '--concurrency', '2', '--rounds', '2', '--upstream',
                    ready['base_url'])
            finally:
                server.terminate()
                server.wait(60)
        other = numbers['upstream']
        for side in (numbers, other):
            self.assertEqual((4, 8, 0, 0, 2), (
                side['cycle_sequential']['n'], side['cycle_concurrent']['n'],
                side['cycle_sequential_errors'],
                side['cycle_concurrent_errors'], side['rounds']))
        self.assertEqual(ready['base_url'], other['target'])
        # Ours counted its statements over both rounds; the other, with
        # no metrics served, none.
        self.assertMetricsCounted(numbers, boots=(4, 8))
        self.assertIsNone(other['statements_per_boot'])
        self.assertLessEqual(
            {'cycle_sequential_p50', 'cycle_concurrent_per_s'},
            set(numbers['ratios']))
        # What the boots cost the whole machine, on each side, and what
        # 10x the other's rate at once would ask of this machine. The
        # machine's busy time comes in ticks of /proc/stat: a phase this
        # short may see none, and then says nothing of it.
        readings = [(side, name) for side in (numbers, other)
                    for name in ('sequential', 'concurrent')
                    if 'cycle_%s_machine_cpu_ms' % name in side]
        self.assertTrue(readings)
        for side, name in readings:
            machine = side['cycle_%s_machine_cpu_ms' % name]
            self.assertGreater(machine, 0)
            self.assertGreaterEqual(side['cycle_%s_client_cpu_ms' % name], 0)
            # (From the unrounded cost.)
            ceiling = 1000 * os.cpu_count() / machine
            self.assertAlmostEqual(
                ceiling, side['cycle_%s_ceiling_per_s' % name],
                delta=ceiling / 100)
            ratio = numbers['ratios'].get('%s_machine_cpu' % name)
            mine = numbers.get('cycle_%s_machine_cpu_ms' % name)
            theirs = other.get('cycle_%s_machine_cpu_ms' % name)
            self.assertEqual(mine is not None and theirs is not None,
                             ratio is not None)
            if ratio is not None:
                self.assertAlmostEqual(theirs / mine, ratio, delta=0.006)
        if 'cycle_concurrent_machine_cpu_ms' in numbers:
            self.assertEqual(
                (10, round(10 * other['cycle_concurrent_per_s'], 1),
                 numbers['cycle_concurrent_machine_cpu_ms']),
                (numbers['tenfold']['factor'], numbers['tenfold']['per_s'],
                 numbers['tenfold']['ours_machine_cpu_ms']))
        else:
            self.assertIsNone(numbers['tenfold'])

    def test_small_run_of_the_split_daemons(self):
        # Placement, cyborg-conductor, cyborg-agent and cyborg-api, each
        # in a process of its own, on MariaDB and RabbitMQ.
        transport = services.require(self, 'rabbit')
        database = services.require(self, 'mysql')
        numbers = run_bench(self, 'api', '--split', '--lists', '0',
                            '--cycles', '4', '--concurrency', '2',
                            '--db-url', database, '--transport-url',
                            transport)
        self.assertEqual(('split daemons', 'mysql', 'rabbit', 0), (
            numbers['server'], numbers['database'], numbers['transport'],
            numbers['cycle_concurrent_errors']))
        self.assertEqual((6, 6), (numbers['booted'], numbers['nova_events']))
        # The server's CPU is that of its four processes; the API and
        # the conductor worked on every boot.
        parts = numbers['cycle_sequential_server_cpu_ms_by_process']
        self.assertEqual({'placement', 'conductor', 'agent', 'api'},
                         set(parts))
        self.assertGreater(parts['api'], 0)
        self.assertGreater(parts['conductor'], 0)
        # Calls from the API to the conductor, each answered.
        self.assertMetricsCounted(numbers, boots=(2, 4))
        self.assertGreater(numbers['cycle_sequential_rpc_messages_per_boot'],
                           0)


class ReportStormBenchmarkTest(testtools.TestCase):

    def storm(self, hosts, devices, *extra):
        """report_storm's numbers, on MariaDB and RabbitMQ, 4 at once."""
        transport = services.require(self, 'rabbit')
        database = services.require(self, 'mysql')
        return run_bench(self, 'report_storm', '--hosts', str(hosts),
                         '--devices', str(devices), '--threads', '4',
                         '--db-url', database, '--transport-url',
                         transport, *extra)

    def assert_first_requests(self, numbers, hosts, devices):
        """A host's first report of N devices: find its compute node,
        create N providers, set N trait lists, and the inventories in a
        reshaper, which syncs reaching it together share (2N + 1, plus one
        reshaper for one to all hosts)."""
        kinds = numbers['placement_requests_first_by_kind']
        self.assertEqual((hosts, hosts * devices, hosts * devices), (
            kinds['GET /resource_providers'],
            kinds['POST /resource_providers'],
            kinds['PUT /resource_providers/traits']))
        self.assertTrue(1 <= kinds['POST /reshaper'] <= hosts, kinds)

    def test_small_storm_on_mariadb_and_rabbitmq(self):
        numbers = self.storm(6, 3)
        self.assertEqual((6, 3, 'mysql'), (numbers['hosts'],
                                           numbers['devices_per_host'],
                                           numbers['database']))
        self.assertGreater(numbers['consistent_s'], 0)
        self.assertGreater(numbers['conductor_cpu_s'], 0)
        self.assertGreater(numbers['db_writes_first'], 0)
        self.assert_first_requests(numbers, 6, 3)
        # An unchanged report (with the sequence the conductor holds)
        # writes nothing and calls no Placement.
        self.assertEqual(0, numbers['db_writes_unchanged'])
        self.assertEqual({}, numbers['db_writes_unchanged_by_table'])
        self.assertEqual(0, numbers['placement_requests_unchanged'])
        self.assertIn('INSERT deployables',
                      numbers['db_writes_first_by_table'])

    def test_small_storm_with_placement_workers(self):
        numbers = self.storm(4, 2, '--placement-workers', '2')
        self.assertEqual(('2 workers (threads)', 4), (numbers['placement'],
                                                      numbers['hosts']))
        # Both workers' requests are counted: three per provider at
        # least (created, inventory, traits).
        self.assertGreaterEqual(numbers['placement_requests_first'], 4 * 6)

    def test_small_storm_with_placement_under_gunicorn(self):
        # As uWSGI's, gunicorn's workers load the WSGI file the benchmark
        # writes, which counts their requests into a file each.
        numbers = self.storm(4, 2, '--placement-workers', '2',
                             '--placement-server', 'gunicorn',
                             '--placement-threads', '2')
        self.assertEqual(('2 workers (gunicorn)', 4),
                         (numbers['placement'], numbers['hosts']))
        # Every request counted, in either worker.
        self.assert_first_requests(numbers, 4, 2)
        # And what each kind cost Placement.
        self.assertEqual(
            set(numbers['placement_requests_first_by_kind']),
            set(numbers['placement_cpu_ms_per_request_first']))


class PlacementCostsBenchmarkTest(testtools.TestCase):

    def test_one_round_on_mariadb(self):
        database = services.require(self, 'mysql')
        numbers = run_bench(self, 'placement_costs', '--rounds', '1',
                            '--db-url', database)
        # Every way of making a device's provider, each request counted:
        # 16 devices a way, their providers and traits made three times.
        self.assertEqual({
            'GET /resource_providers?name=': 12,
            'POST /resource_providers': 48, 'PUT .../traits': 48,
            'POST /reshaper, per device': 1, 'POST .../inventories': 16,
            'PUT .../inventories': 16}, numbers['requests'])
        for kind, ms in numbers['cpu_ms_median'].items():
            self.assertGreater(ms, 0, kind)


class AgentBenchmarkTest(testtools.TestCase):

    def test_small_run_on_rabbitmq(self):
        transport = services.require(self, 'rabbit')
        numbers = run_bench(self, 'agent', '--devices', '6', '--runs', '5',
                            '--idle-seconds', '3', '--rescan-interval', '1',
                            '--transport-url', transport)
        # 6 cards: a T4, a C62x with 4 VFs, a U200, an A100, a 4xxx, a T4.
        self.assertEqual((6, 5), (numbers['devices'], numbers['runs']))
        self.assertEqual(9, numbers['deployables'])
        self.assertGreater(numbers['discovery_p50_ms'], 0)
        self.assertGreaterEqual(numbers['discovery_p99_ms'],
                                numbers['discovery_p50_ms'])
        self.assertGreater(numbers['agent_cpu_s_total'], 0)
        # An unchanged host sends no report while idle.
        self.assertEqual(0, numbers['reports_idle'])
        self.assertGreater(numbers['tree_edit_to_conductor_s'], 0)


class HeartbeatBenchmarkTest(testtools.TestCase):

    def test_small_run_on_rabbitmq(self):
        transport = services.require(self, 'rabbit')
        numbers = run_bench(self, 'heartbeats', '--hosts', '20', '--rate',
                            '50', '--seconds', '1', '--transport-url',
                            transport)
        for path in ('rpc', 'channel'):
            result = numbers['paths'][path]
            self.assertEqual((50, 50, 0, 20),
                             (result['sent'], result['noted'],
                              result['lost'], result['hosts_heard']), path)
            self.assertGreater(result['receiver_cpu_ms_per_heartbeat'], 0)
            self.assertGreater(result['sender_cpu_ms_per_heartbeat'], 0)
        self.assertGreater(numbers['receiver_ratio'], 0)


class ChartTest(testtools.TestCase):
    """The benchmarks' PNG charts are PNG files of the promised size."""

    def test_line_chart(self):
        import struct
        import tempfile
        import zlib
        sys.path.insert(0, os.path.join(TOP, 'tools', 'bench'))
        self.addCleanup(sys.path.remove, os.path.join(TOP, 'tools', 'bench'))
        import pngchart
        with tempfile.NamedTemporaryFile(suffix='.png') as f:
            series = [([(250, 2.5), (1000, 9)], (0, 0, 255)),
                      ([(100, 30), (200, 61)], (255, 0, 0))]
            pngchart.line_chart(f.name, series, y_max=60)
            data = f.read()
        self.assertEqual(b'\x89PNG\r\n\x1a\n', data[:8])
        width, height = struct.unpack('>II', data[16:24])
        self.assertEqual((pngchart.WIDTH, pngchart.HEIGHT), (width, height))
        length = struct.unpack('>I', data[33:37])[0]
        self.assertEqual(b'IDAT', data[37:41])
        pixels = zlib.decompress(data[41:41 + length])
        self.assertEqual(height * (1 + 3 * width), len(pixels))
        # Both series' colours are drawn.
        self.assertIn(bytes((0, 0, 255)), pixels)
        self.assertIn(bytes((255, 0, 0)), pixels)
