"""cyborg-conductor: the only writer of the database."""

import sys

from cyborg.common import preflight
from cyborg.common import profiler
from cyborg.common import rpc
from cyborg.common import service
from cyborg.conductor import manager
from cyborg.db import api as db_api
from cyborg.db import migration


PROG = 'cyborg-conductor'
DESCRIPTION = ("Run cyborg's conductor: the only writer of the database; it "
               "takes the agents' reports, keeps Placement in step and "
               "binds accelerator requests. Run one or more.")


def main():
    service.prepare_service(sys.argv, prog=PROG, description=DESCRIPTION)
    conf = service.CONF
    profiler.setup(conf, 'conductor', conf.host)
    # The schema check waits for a database that does not answer.
    service.exit_on_signal()
    db_api.configure(conf)
    preflight.run(PROG, lambda: migration.check_ready(
        conf.database.connection))
    svc = service.RPCService(conf.host, rpc.CONDUCTOR_TOPIC,
                             manager.ConductorManager(conf.host, conf))
    service.finish(service.run_in_foreground(svc))


if __name__ == '__main__':
    sys.exit(main())
