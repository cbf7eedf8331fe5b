"""A daemon served in the foreground (agent, conductor, all-in-one, the
API with one worker)."""

import gc
import os
import signal
import threading

from cyborg.common import service
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
