"""The timers of the daemons' periodic tasks."""

import threading

from cyborg.common import rpc
from cyborg.common import service
from cyborg.tests import base
from cyborg.tests import fixtures


class PeriodicTaskTest(base.TestCase):

    def test_runs_at_once_and_stop_wakes_it(self):
        ran = threading.Event()

        def task():
            ran.set()
        # An hour between runs: only stop() can end the wait.
        timer = service.PeriodicTask(3600, task)
        timer.start()
        self.addCleanup(timer.stop)
        self.assertTrue(ran.wait(30))
        timer.stop()
        timer.join(30)
        self.assertFalse(timer.is_alive())

    def test_runs_again_after_its_interval(self):
        runs = []
        done = threading.Event()

        def task():
            runs.append(1)
            if len(runs) == 3:
                done.set()
        timer = service.PeriodicTask(0, task)
        timer.start()
        self.addCleanup(timer.stop)
        self.assertTrue(done.wait(30))

    def test_the_service_stops_its_timers(self):

        class Manager:
            def __init__(self):
                self.calls = 0

            def periodic_tasks(self):
                return [(3600, self.tick)]

            def tick(self):
                self.calls += 1

        self.useFixture(fixtures.Messaging(self, self.conf))
        svc = fixtures.start_rpc_service(self, Manager(), rpc.AGENT_TOPIC,
                                         'h')
        [timer] = svc.timers
        svc.stop()
        timer.join(30)
        self.assertFalse(timer.is_alive())
        self.assertEqual([], svc.timers)
