"""The API as a module-level WSGI ``application`` for uwsgi or mod_wsgi.

The hosting server owns the command line, so configuration comes only from
files: ``$CYBORG_CONFIG_FILE`` if set, else ``/etc/cyborg/cyborg.conf`` if
it exists. Under uwsgi, load the app in each worker (``lazy-apps = true``)
so that every worker gets its own messaging connections.

Loading checks what ``cyborg-api`` checks at start (the configuration,
the authentication, the database and its schema): a failure is one line
on stderr and ``SystemExit(2)``, so the process that loads the module
exits rather than serve every request with a 500 (under uwsgi also set
``need-app = true``).

With ``[metrics] enabled``, every worker counts in the files of
``$PROMETHEUS_MULTIPROC_DIR``, which the server sets (and empties at its
start), and serves their sum on ``[metrics] port``, which all workers
bind (see doc/source/admin/metrics.rst).
"""

import os
import sys

from oslo_log import log as logging

from cyborg.api import app as api_app
from cyborg.common import keys
from cyborg.common import metrics
from cyborg.common import profiler
from cyborg.common import rpc
from cyborg.common import service
from cyborg import conf as cyborg_conf
from cyborg.db import api as db_api

CONF = cyborg_conf.CONF
CONFIG_FILE_ENV = 'CYBORG_CONFIG_FILE'
DEFAULT_CONFIG_FILE = '/etc/cyborg/cyborg.conf'
LOG = logging.getLogger(__name__)
PROG = 'cyborg-wsgi-api'


def config_files():
    """The configuration files to read, by the rule in the module doc."""
    path = os.environ.get(CONFIG_FILE_ENV)
    if path:
        return [path]
    return [DEFAULT_CONFIG_FILE] if os.path.exists(DEFAULT_CONFIG_FILE) else []


def init_application():
    """Parse config, set up logging and messaging, build the app."""
    service.prepare_service([PROG],
                            default_config_files=config_files())
    CONF.log_opt_values(LOG, logging.DEBUG)
    profiler.setup(CONF, 'api', CONF.host)
    db_api.configure(CONF)
    api_app.check_can_serve(CONF, PROG)
    _serve_metrics()
    rpc.init(CONF, identity=keys.API)
    return api_app.setup_app(CONF)


def _serve_metrics():
    try:
        metrics.serve_wsgi(CONF)
    except metrics.CannotServe as e:
        print('%s: error: %s' % (PROG, e), file=sys.stderr)
        raise SystemExit(2) from None


application = init_application()
