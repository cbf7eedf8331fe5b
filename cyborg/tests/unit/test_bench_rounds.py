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
