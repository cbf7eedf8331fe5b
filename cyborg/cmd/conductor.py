"""cyborg-conductor: the only writer of the database."""

import sys

from cyborg.common import exception
from cyborg.common import rpc
from cyborg.common import service
from cyborg.conductor import manager
from cyborg.db import api as db_api
from cyborg.db import migration


def main():
    service.prepare_service(sys.argv)
    conf = service.CONF
    db_api.configure(conf)
    try:
        migration.check_at_head()
    except exception.DBNotAtHead as e:
        sys.exit('cyborg-conductor: %s' % e)
    svc = service.RPCService(conf.host, rpc.CONDUCTOR_TOPIC,
                             manager.ConductorManager(conf.host, conf))
    return service.run_in_foreground(svc)


if __name__ == '__main__':
    sys.exit(main())
