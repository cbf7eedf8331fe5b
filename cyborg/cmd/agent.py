"""cyborg-agent: finds this host's accelerators; one per compute host."""

import sys

from cyborg.agent import manager
from cyborg.common import rpc
from cyborg.common import service


def main():
    service.prepare_service(sys.argv)
    conf = service.CONF
    svc = service.RPCService(conf.host, rpc.AGENT_TOPIC,
                             manager.AgentManager(conf.host, conf))
    return service.run_in_foreground(svc)


if __name__ == '__main__':
    sys.exit(main())
