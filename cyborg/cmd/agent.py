"""cyborg-agent: finds this host's accelerators; one per compute host."""

import sys

from cyborg.agent import manager
from cyborg.common import pidlock
from cyborg.common import rpc
from cyborg.common import service

PROG = 'cyborg-agent'
DESCRIPTION = ("Run cyborg's agent: it finds this host's accelerators with "
               "the enabled drivers and reports them to the conductor; one "
               "per compute host.")


def main():
    service.prepare_service(sys.argv, prog=PROG, description=DESCRIPTION)
    conf = service.CONF
    # One agent per state file, held until the process ends.
    pidlock.hold(conf.agent.state_file + pidlock.LOCK_SUFFIX, PROG,
                 '[agent] state_file %s' % conf.agent.state_file)
    svc = service.RPCService(conf.host, rpc.AGENT_TOPIC,
                             manager.AgentManager(conf.host, conf))
    service.finish(service.run_in_foreground(svc))


if __name__ == '__main__':
    sys.exit(main())
