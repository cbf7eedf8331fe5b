"""cyborg-agent: finds this host's accelerators; one per compute host.

``cyborg-agent --capture FILE`` instead writes what the agent reads on
this host as one JSON file (``-``: standard output) and exits; see
:mod:`cyborg.accelerator.common.capture`. It says what it wrote in one
line ("wrote FILE: N PCI functions", on stderr when the capture itself
goes to stdout), or why it could not in one line on stderr, with exit
status 1.
"""

import os
import signal
import sys

from oslo_config import cfg

from cyborg.accelerator.common import capture
from cyborg.agent import manager
from cyborg.common import pidlock
from cyborg.common import profiler
from cyborg.common import rpc
from cyborg.common import service

PROG = 'cyborg-agent'
DESCRIPTION = ("Run cyborg's agent: it finds this host's accelerators with "
               "the enabled drivers and reports them to the conductor; one "
               "per compute host.")

CLI_OPTS = [
    cfg.StrOpt('capture', metavar='FILE',
               help='Write what the agent reads on this host (PCI '
                    'functions, mdev types, IOMMU groups) as one JSON file '
                    '("-": standard output) and exit, without starting the '
                    'agent.'),
]


def main(argv=None):
    argv = sys.argv if argv is None else argv
    conf = service.CONF
    conf.register_cli_opts(CLI_OPTS)
    service.prepare_service(argv, prog=PROG, description=DESCRIPTION)
    if conf.capture:
        return _capture(conf.capture, conf)
    profiler.setup(conf, 'agent', conf.host)
    # One agent per state file, held until the process ends.
    pidlock.hold(conf.agent.state_file + pidlock.LOCK_SUFFIX, PROG,
                 '[agent] state_file %s' % conf.agent.state_file)
    # Refused by the conductor (another live agent holds this host): the
    # agent said why, stops as on SIGTERM, and exits with status 1.
    agent = manager.AgentManager(
        conf.host, conf,
        on_refused=lambda: os.kill(os.getpid(), signal.SIGTERM))
    svc = service.RPCService(conf.host, rpc.AGENT_TOPIC, agent)
    status = service.run_in_foreground(svc)
    service.finish(1 if agent.reporter.refused else status)


def _capture(path, conf):
    """``--capture PATH``: the exit status. The outcome is said on the
    terminal, not in the agent's log file that the configuration names."""
    try:
        count = capture.write(path, capture.resolve_root(conf))
    except (OSError, capture.InvalidCapture) as e:
        print('%s: error: cannot capture this host to %s: %s'
              % (PROG, path, e), file=sys.stderr)
        return 1
    print('wrote %s: %d PCI functions' % (
        'standard output' if path == '-' else path, count),
        file=sys.stderr if path == '-' else sys.stdout)
    return 0


if __name__ == '__main__':
    sys.exit(main())
