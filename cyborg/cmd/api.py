"""cyborg-api: the REST API, served by cheroot.

One worker (``[api] api_workers = 1``) serves from this process; more
are forked by oslo.service's launcher and serve the listening socket this
process made.
"""

import sys

from cyborg.api import app as api_app
from cyborg.api import server
from cyborg.common import metrics
from cyborg.common import profiler
from cyborg.common import service
from cyborg import conf as cyborg_conf
from cyborg.db import api as db_api

CONF = cyborg_conf.CONF


PROG = 'cyborg-api'
DESCRIPTION = ("Run cyborg's REST API (v2, and the v1 view) on [api] host_ip "
               "and port, with [api] api_workers processes.")


def main():
    service.prepare_service(sys.argv, prog=PROG, description=DESCRIPTION)
    profiler.setup(CONF, 'api', CONF.host)
    workers = CONF.api.api_workers or server.default_workers()
    if workers > 1:
        # Before anything is counted; the workers' sum is served here.
        try:
            metrics.serve_workers(CONF)
        except metrics.CannotServe as e:
            print('%s: error: %s' % (PROG, e), file=sys.stderr)
            raise SystemExit(2) from None
    # The API reads the database: its engines as the conductor's (utf8mb4,
    # pings only after idle). Each worker starts its own.
    db_api.configure(CONF)
    # The check waits for a database that does not answer.
    service.exit_on_signal()
    api_app.check_can_serve(CONF, PROG)
    api = server.APIService(CONF, workers=workers)
    if workers == 1:
        # No parent that only watches a single worker: half the memory.
        service.finish(service.run_in_foreground(api))
    # The check connected from the parent; each worker opens its own.
    db_api.get_engine().dispose()
    sys.exit(service.launch([api], workers=workers))


if __name__ == '__main__':
    main()
