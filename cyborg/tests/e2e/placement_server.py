"""Placement alone in a process of its own, for the end-to-end clouds
whose cyborg runs as split daemons (``cloud.SplitCloud``): Nova and
cyborg share it, as they share a deployment's Placement.

It is the openstack-placement application cyborg-aio embeds (noauth2, on
SQLite in ``STATE_DIR``), served on ``127.0.0.1:PORT`` until SIGTERM.

Usage: python -m cyborg.tests.e2e.placement_server PORT STATE_DIR
"""

import signal
import sys
import threading

from cyborg.aio import placement as aio_placement
from cyborg.api import server as api_server

THREADS = 16


def main(argv):
    port, state_dir = int(argv[1]), argv[2]
    server = api_server.WSGIServer(aio_placement.build_app(state_dir),
                                   '127.0.0.1', port, THREADS,
                                   name='e2e-placement')
    server.start()
    print('Placement serves on 127.0.0.1:%d' % server.port, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    while not stop.wait(1):
        pass
    server.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
