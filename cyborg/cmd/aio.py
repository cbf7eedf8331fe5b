"""cyborg-aio: the whole service in one process."""

import os
import sys

from cyborg.aio import service as aio_service
from cyborg.api import app as api_app
from cyborg.api import server as api_server
from cyborg.common import pidlock
from cyborg.common import profiler
from cyborg.common import service
from cyborg.conf import aio as conf_aio
from cyborg.db import api as db_api

PROG = 'cyborg-aio'
DESCRIPTION = ('Run cyborg whole in one process: the API, the conductor, an '
               'agent and an embedded Placement, on SQLite and in-process '
               'messaging.')


def main(argv=None):
    argv = sys.argv if argv is None else argv
    conf = service.CONF
    conf_aio.register_cli_opts(conf)
    service.prepare_service(argv, prog=PROG, description=DESCRIPTION)
    profiler.setup(conf, 'aio', conf.host)
    state_dir = os.path.expanduser(conf.state_dir)
    # Held until the process ends, when the kernel lets go of it.
    pidlock.hold(os.path.join(state_dir, pidlock.AIO_LOCK_FILE), PROG,
                 '--state-dir %s' % state_dir)
    aio_service.configure(conf, conf.bind_host, conf.port, state_dir,
                          conf.sysfs_root)
    db_api.configure(conf)
    service.exit_on_signal()
    api_app.check_can_serve(conf, PROG, at_head=False)
    # Taken before anything starts: a port in use is one line, exit 2.
    listener = api_server.listen_or_exit(conf.api.host_ip, conf.api.port,
                                         PROG)
    service.finish(service.run_in_foreground(
        aio_service.AllInOne(conf, listener=listener)))


if __name__ == '__main__':
    sys.exit(main())
