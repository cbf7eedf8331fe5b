"""Group commit of concurrent work (cyborg.common.coalesce)."""

import threading

import fixtures

from cyborg.common import coalesce
from cyborg.tests import base
from cyborg.tests.functional.test_hello import wait_for


class _Batches(base.TestCase):
    """Records the batches run; ``gate`` holds a batch while clear."""

    def setUp(self):
        super().setUp()
        self.batches = []
        self.gate = threading.Event()
        self.gate.set()

    def apply(self, items):
        self.batches.append(list(items))
        self.gate.wait(30)
        return [item * 10 if item >= 0 else ValueError(item)
                for item in items]

    def submit_all(self, coalescer, items):
        results = {}

        def one(item):
            try:
                results[item] = coalescer.submit(item)
            except Exception as e:
                results[item] = e

        threads = [threading.Thread(target=one, args=(item,))
                   for item in items]
        for thread in threads:
            thread.start()
        return threads, results


class CoalescerTest(_Batches):

    def test_alone_it_runs_at_once(self):
        coalescer = coalesce.Coalescer(self.apply)
        self.assertEqual(30, coalescer.submit(3))
        self.assertEqual([[3]], self.batches)

    def test_what_arrives_during_a_batch_is_the_next_batch(self):
        coalescer = coalesce.Coalescer(self.apply)
        self.gate.clear()
        first, results = self.submit_all(coalescer, [1])
        wait_for(lambda: self.batches)
        threads, more = self.submit_all(coalescer, [2, 3, 4, -5])
        wait_for(lambda: len(coalescer._pending) == 4)
        self.gate.set()
        for thread in first + threads:
            thread.join(30)
        results.update(more)
        self.assertEqual([[1], [-5, 2, 3, 4]],
                         [self.batches[0], sorted(self.batches[1])])
        self.assertEqual({1: 10, 2: 20, 3: 30, 4: 40},
                         {k: v for k, v in results.items() if k > 0})
        # An item's exception goes to its submitter only.
        self.assertIsInstance(results[-5], ValueError)
        self.assertEqual((2, 5), (coalescer.batches, coalescer.items))

    def test_batches_are_capped(self):
        coalescer = coalesce.Coalescer(self.apply, max_batch=2)
        self.gate.clear()
        first, results = self.submit_all(coalescer, [0])
        wait_for(lambda: self.batches)
        threads, more = self.submit_all(coalescer, [1, 2, 3, 4, 6])
        wait_for(lambda: len(coalescer._pending) == 5)
        self.gate.set()
        for thread in first + threads:
            thread.join(30)
        results.update(more)
        self.assertEqual([1, 2, 2, 1], [len(b) for b in self.batches])
        self.assertEqual({i: i * 10 for i in (0, 1, 2, 3, 4, 6)}, results)

    def test_a_failed_batch_fails_each_of_its_items(self):
        def broken(items):
            raise RuntimeError('database gone')

        coalescer = coalesce.Coalescer(broken)
        self.assertRaisesRegex(RuntimeError, 'database gone',
                               coalescer.submit, 1)
        # The coalescer is not stuck afterwards.
        coalescer._apply_batch = self.apply
        self.assertEqual(20, coalescer.submit(2))

    def test_a_wrong_number_of_outcomes_is_an_error(self):
        coalescer = coalesce.Coalescer(lambda items: [])
        self.assertRaisesRegex(RuntimeError, '0 outcomes for 1 items',
                               coalescer.submit, 1)


class PostTest(_Batches):
    """Items nobody waits for: posted, run by the coalescer's thread."""

    def test_a_posted_item_runs_without_its_poster(self):
        coalescer = coalesce.Coalescer(self.apply)
        coalescer.post(1)
        self.assertTrue(coalescer.wait_idle(30))
        self.assertEqual([[1]], self.batches)
        # The thread ended with the work; the next post starts another.
        wait_for(lambda: coalescer._drainer is None)
        coalescer.post(2)
        self.assertTrue(coalescer.wait_idle(30))
        self.assertEqual([[1], [2]], self.batches)

    def test_posts_during_a_batch_are_the_next_batch(self):
        coalescer = coalesce.Coalescer(self.apply)
        self.gate.clear()
        coalescer.post(1)
        wait_for(lambda: self.batches)
        for item in (2, 3, 4):
            coalescer.post(item)
        self.assertFalse(coalescer.wait_idle(0))
        self.gate.set()
        self.assertTrue(coalescer.wait_idle(30))
        self.assertEqual([[1], [2, 3, 4]], self.batches)

    def test_posts_and_submits_share_batches(self):
        coalescer = coalesce.Coalescer(self.apply)
        self.gate.clear()
        threads, results = self.submit_all(coalescer, [1])
        wait_for(lambda: self.batches)
        coalescer.post(2)
        more, others = self.submit_all(coalescer, [3])
        wait_for(lambda: len(coalescer._pending) == 2)
        self.gate.set()
        for thread in threads + more:
            thread.join(30)
        self.assertTrue(coalescer.wait_idle(30))
        self.assertEqual([[1], [2, 3]], self.batches)
        results.update(others)
        self.assertEqual({1: 10, 3: 30}, results)

    def test_a_failed_posted_item_is_logged(self):
        logs = self.useFixture(fixtures.FakeLogger())
        coalescer = coalesce.Coalescer(self.apply)
        coalescer.post(-7)
        self.assertTrue(coalescer.wait_idle(30))
        self.assertIn('Posted -7 failed', logs.output)
        coalescer.post(7)
        self.assertTrue(coalescer.wait_idle(30))
        self.assertEqual([[-7], [7]], self.batches)
