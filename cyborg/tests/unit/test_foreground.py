"""A daemon served in the foreground (agent, conductor, all-in-one, the
API with one worker)."""

import gc
import os
import signal
import threading
import time

from cyborg.common import service
from cyborg.common import stopping
from cyborg.tests import base


class _Service:

    def __init__(self):
        self.frozen_when_stopped = None

    def start(self):
        # What a daemon makes as it starts, then SIGTERM a moment later.
        self.made = [{'n': n} for n in range(1000)]
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()

    def stop(self):
        self.frozen_when_stopped = gc.get_freeze_count()


class ForegroundTest(base.TestCase):

    def setUp(self):
        super().setUp()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self.addCleanup(signal.signal, signum, signal.getsignal(signum))
        gc.unfreeze()
        self.addCleanup(gc.unfreeze)

    def test_what_starting_made_is_left_out_of_collections(self):
        svc = _Service()
        self.assertEqual(0, gc.get_freeze_count())
        self.assertEqual(0, service.run_in_foreground(svc, self.conf))
        # Frozen once started: the service's own objects among them.
        self.assertGreater(svc.frozen_when_stopped, len(svc.made))


class _Blocked:
    """A service whose start or stop waits ``seconds`` for something
    that does not come, unaware of any signal (a connect to a broker that
    does not answer, a request to a service that hangs)."""

    def __init__(self, start=0.0, stop=0.0):
        self.waits = {'start': start, 'stop': stop}
        self.stopped = threading.Event()
        self.signalled_at = None

    def signal_soon(self, signum):
        """``signum`` to this process in 0.2 s, noting when it was sent."""
        def send():
            self.signalled_at = time.monotonic()
            os.kill(os.getpid(), signum)
        threading.Timer(0.2, send).start()

    def start(self):
        self.signal_soon(signal.SIGTERM)
        threading.Event().wait(self.waits['start'])

    def stop(self):
        threading.Event().wait(self.waits['stop'])
        self.stopped.set()


class _WaitsForStop(_Blocked):
    """A start that waits for the process to stop, as the broker retries
    and a guest's wait for its exchange do."""

    def start(self):
        self.signal_soon(signal.SIGINT)
        stopping.sleep(60)


class StopPromptlyTest(base.TestCase):
    """SIGTERM or SIGINT ends run_in_foreground within STOP_TIMEOUT
    seconds, whatever the start or the stop waits for."""

    def setUp(self):
        super().setUp()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self.addCleanup(signal.signal, signum, signal.getsignal(signum))
        self.addCleanup(gc.unfreeze)
        self.addCleanup(stopping.clear)

    # What operators are promised: a daemon is gone within 5 s of the
    # signal (STOP_TIMEOUT, 3.5 s, leaves the rest for the exit itself).
    PROMISED = 5.0

    def run_timed(self, svc):
        """run_in_foreground's status, and the seconds from the signal
        to its return (not from the start: a loaded machine may send the
        signal late)."""
        status = service.run_in_foreground(svc, self.conf)
        return status, time.monotonic() - svc.signalled_at

    def test_a_start_that_waits_for_the_stop_is_cut_short(self):
        svc = _WaitsForStop()
        status, took = self.run_timed(svc)
        self.assertEqual(0, status)
        self.assertLess(took, service.STOP_TIMEOUT)
        # What the start did is stopped.
        self.assertTrue(svc.stopped.is_set())

    def test_a_start_deaf_to_the_signal_is_left_behind(self):
        status, took = self.run_timed(_Blocked(start=15))
        self.assertEqual(0, status)
        self.assertLess(took, self.PROMISED)

    def test_a_stop_that_hangs_is_left_at_the_deadline(self):
        svc = _Blocked(stop=15)
        status, took = self.run_timed(svc)
        self.assertEqual(0, status)
        self.assertLess(took, self.PROMISED)
        self.assertFalse(svc.stopped.is_set())


class _Server:

    def __init__(self, hang):
        self.hang = hang

    def stop(self):
        pass

    def wait(self):
        # A request that does not end: a bind waiting for Glance.
        threading.Event().wait(self.hang)


class _Manager:

    def __init__(self):
        self.gone = threading.Event()

    def del_host(self):
        self.gone.set()


class RPCServiceStopTest(base.TestCase):

    def test_the_manager_stops_though_a_request_runs_on(self):
        manager = _Manager()
        svc = service.RPCService('h', 'topic', manager, self.conf)
        svc.rpcserver = _Server(hang=15)
        began = time.monotonic()
        svc.stop()
        took = time.monotonic() - began
        self.assertTrue(manager.gone.is_set())
        self.assertLess(took, service.STOP_TIMEOUT)
