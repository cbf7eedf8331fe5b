"""tools/bench/api beside another deployment: each phase in rounds, the
two taking turns, and the numbers of a phase those of all its rounds."""

import argparse
from unittest import mock

import testtools

from cyborg.tests import benchtools


class RoundsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.api = benchtools.load('api')

    def args(self, **kwargs):
        values = dict(cycles=20, concurrency=4, rounds=3, lists=0,
                      upstream='http://upstream', upstream_events=None)
        values.update(kwargs)
        return argparse.Namespace(**values)

    def test_boots_shared_out_over_the_rounds(self):
        self.assertEqual([4, 3, 3], self.api.rounds(10, 3))
        self.assertEqual([20], self.api.rounds(20, 1))
        self.assertEqual([1, 1, 0], self.api.rounds(2, 3))

    def recorded(self, args):
        """The phases each side ran, in order: (side, phase, boots, at
        once), with the result measure returned."""
        calls = []

        class Side:
            def __init__(self, _args, ready, _nova, _events_url=None):
                self.name = ready['base_url']

            def lists(self):
                calls.append((self.name, 'lists'))

            def run(self, name, count, concurrency):
                calls.append((self.name, name, count, concurrency))

            def numbers(self):
                return {'side': self.name}, self.name == 'upstream-url'

        with mock.patch.object(self.api, 'Side', Side), \
                mock.patch.object(self.api.bootcycle, 'target_ready',
                                  return_value={'base_url': 'upstream-url'}):
            result = self.api.measure(args, {'base_url': 'ours-url'}, None)
        return calls, result

    def test_taking_turns_who_goes_first_alternating(self):
        calls, (result, errors) = self.recorded(self.args())
        ours, up = 'ours-url', 'upstream-url'
        self.assertEqual([
            (ours, 'sequential', 4, 1), (up, 'sequential', 4, 1),
            (up, 'sequential', 3, 1), (ours, 'sequential', 3, 1),
            (ours, 'sequential', 3, 1), (up, 'sequential', 3, 1),
            (ours, 'concurrent', 7, 4), (up, 'concurrent', 7, 4),
            (up, 'concurrent', 7, 4), (ours, 'concurrent', 7, 4),
            (ours, 'concurrent', 6, 4), (up, 'concurrent', 6, 4)], calls)
        self.assertEqual({'side': ours, 'upstream': {
            'side': up, 'target': 'http://upstream'}}, result)
        # Upstream's failed boots fail the run.
        self.assertTrue(errors)

    def test_alone_in_one_round(self):
        calls, (result, errors) = self.recorded(self.args(
            upstream=None, rounds=1, lists=5))
        self.assertEqual([('ours-url', 'lists'),
                          ('ours-url', 'sequential', 10, 1),
                          ('ours-url', 'concurrent', 20, 4)], calls)
        self.assertEqual(({'side': 'ours-url'}, False), (result, errors))

    def test_a_phase_is_all_its_rounds(self):
        bootcycle = self.api.bootcycle
        total = bootcycle.Cycles(0, 1)
        for latencies, seconds in (([0.010, 0.030], 0.5), ([0.020], 0.25)):
            run = bootcycle.Cycles(len(latencies), 2)
            run.latencies = list(latencies)
            run.instances = ['i%d' % len(latencies)]
            run.steps['bind'] = [latency / 2 for latency in latencies]
            run.seconds = seconds
            total.add(run)
        numbers = total.numbers()
        self.assertEqual({'p50_ms': 20.0, 'p99_ms': 30.0, 'mean_ms': 20.0,
                          'n': 3}, numbers['summary'])
        # 3 boots in the 0.75 s its rounds took.
        self.assertEqual(4.0, numbers['boots_per_s'])
        self.assertEqual(10.0, numbers['steps_p50_ms']['bind'])
        self.assertEqual(['i2', 'i1'], total.instances)

    def test_counts_of_the_rounds_added(self):
        total = {}
        for _ in range(2):
            self.api._added(total, {'statements': 13,
                                    'statements_by_kind': {'select': 7,
                                                           'update': 4},
                                    'binds_by_outcome': {'Bound': 1}})
        self.api._added(total, {'statements': 1,
                                'statements_by_kind': {'delete': 1},
                                'binds_by_outcome': {}})
        self.assertEqual({'statements': 27,
                          'statements_by_kind': {'select': 14, 'update': 8,
                                                 'delete': 1},
                          'binds_by_outcome': {'Bound': 2}}, total)


class MachineCPUTest(testtools.TestCase):
    """What a phase's boots cost the whole machine, and what 10x
    upstream's rate at once asks of it."""

    def setUp(self):
        super().setUp()
        self.api = benchtools.load('api')

    def test_per_boot_and_the_ceiling_of_the_cores(self):
        result = {}
        self.api.machine_cpu(result, 'concurrent',
                             {'machine': 3.6, 'client': 0.9}, 200, 2)
        self.assertEqual({'cycle_concurrent_machine_cpu_ms': 18.0,
                          'cycle_concurrent_client_cpu_ms': 4.5,
                          # 2 cores, 18 ms each boot.
                          'cycle_concurrent_ceiling_per_s': 111.1}, result)

    def test_nothing_without_boots_or_a_reading(self):
        result = {}
        self.api.machine_cpu(result, 'sequential',
                             {'machine': 1.0, 'client': 0.1}, 0, 2)
        self.api.machine_cpu(result, 'sequential',
                             {'machine': 0.0, 'client': 0.0}, 10, 2)
        self.assertEqual({}, result)

    def test_tenfold_upstream(self):
        ours = {'cycle_concurrent_machine_cpu_ms': 18.0}
        self.assertEqual(
            {'factor': 10, 'per_s': 115.0, 'machine_cpu_ms_at_most': 17.4,
             'ours_machine_cpu_ms': 18.0},
            self.api.tenfold(ours, {'cycle_concurrent_per_s': 11.5}, 2))
        self.assertIsNone(self.api.tenfold(
            {}, {'cycle_concurrent_per_s': 11.5}, 2))
        self.assertIsNone(self.api.tenfold(
            ours, {'cycle_concurrent_per_s': None}, 2))

    def test_read_around_each_round(self):
        readings = iter([{'machine': 10.0, 'client': 1.0},
                         {'machine': 12.0, 'client': 1.5},
                         {'machine': 20.0, 'client': 2.0},
                         {'machine': 21.0, 'client': 2.2}])
        side = self.api.Side.__new__(self.api.Side)
        side.metrics = {}
        side.pids = {}
        side.client = side.nova = None
        side.ready = {'rp_uuids': []}
        side.runs = {'concurrent': self.api.bootcycle.Cycles(0, 1)}
        side.cpu = {'concurrent': {}}
        side.machine = {'concurrent': {'machine': 0.0, 'client': 0.0}}
        run = self.api.bootcycle.Cycles(0, 1)
        with mock.patch.object(self.api, 'machine_seconds',
                               side_effect=lambda: next(readings)), \
                mock.patch.object(self.api.bootcycle.Cycles, 'run',
                                  return_value=run):
            side.run('concurrent', 5, 2)
            side.run('concurrent', 5, 2)
        self.assertEqual({'machine': 3.0, 'client': 0.7},
                         {k: round(v, 6) for k, v in
                          side.machine['concurrent'].items()})

    def test_ratios_of_the_machines_cpu(self):
        ours = {'cycle_sequential': {'p50_ms': 12.0},
                'cycle_concurrent_per_s': 80.0,
                'cycle_sequential_machine_cpu_ms': 16.0,
                'cycle_concurrent_machine_cpu_ms': 18.0}
        upstream = {'cycle_sequential': {'p50_ms': 120.0},
                    'cycle_concurrent_per_s': 10.0,
                    'cycle_sequential_machine_cpu_ms': 88.0,
                    'cycle_concurrent_machine_cpu_ms': 135.0}
        self.assertEqual({'cycle_sequential_p50': 10.0,
                          'cycle_concurrent_per_s': 8.0,
                          'sequential_machine_cpu': 5.5,
                          'concurrent_machine_cpu': 7.5},
                         self.api.ratios(ours, upstream))
        # A side without the reading: no such ratio.
        del upstream['cycle_concurrent_machine_cpu_ms']
        self.assertNotIn('concurrent_machine_cpu',
                         self.api.ratios(ours, upstream))
