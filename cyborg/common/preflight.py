"""What a daemon checks before it serves, and how it says no.

``cyborg-api`` (and its WSGI application), ``cyborg-conductor`` and
``cyborg-aio`` run their checks through :func:`run`: a failure ends the
process with exit status 2 and one line on stderr, ``<prog>: error:
<what, and what to do>``, as a configuration mistake does
(:mod:`cyborg.common.config_check`). A supervisor (systemd's
``Restart=on-failure``) starts it again; its journal shows one line per
try instead of a traceback per try.
"""

import sys

from oslo_log import log as logging

from cyborg.common import config_check
from cyborg.common import exception

LOG = logging.getLogger(__name__)

#: What a check raises to refuse the start.
REFUSALS = (config_check.ConfigError, exception.DatabaseNotReady)


def run(prog, *checks):
    """Call each of ``checks`` in turn; on a refusal, log it, say it in
    one line on stderr and exit with status 2."""
    try:
        for check in checks:
            check()
    except REFUSALS as e:
        refusal = str(e)
    else:
        return
    LOG.error('Not starting: %s', refusal)
    print('%s: error: %s' % (prog, refusal), file=sys.stderr)
    raise SystemExit(config_check.EXIT_STATUS)
