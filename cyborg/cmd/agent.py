"""cyborg-agent: finds this host's accelerators; one per compute host.

``cyborg-agent --capture FILE`` instead writes what the agent reads on
this host as one JSON file (``-``: standard output) and exits; see
:mod:`cyborg.accelerator.common.capture`.
"""

import argparse
import sys

from cyborg.accelerator.common import capture
from cyborg.agent import manager
from cyborg.common import rpc
from cyborg.common import service


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(prog='cyborg-agent', add_help=False)
    parser.add_argument('--capture', metavar='FILE')
    args, rest = parser.parse_known_args(argv[1:])
    service.prepare_service([argv[0]] + rest)
    conf = service.CONF
    if args.capture:
        capture.write(args.capture, capture.resolve_root(conf))
        return 0
    svc = service.RPCService(conf.host, rpc.AGENT_TOPIC,
                             manager.AgentManager(conf.host, conf))
    return service.run_in_foreground(svc)


if __name__ == '__main__':
    sys.exit(main())
