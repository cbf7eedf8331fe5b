"""Configuration: one module per option group, all registered on CONF."""

from oslo_config import cfg

from cyborg.conf import agent
from cyborg.conf import aio
from cyborg.conf import api
from cyborg.conf import conductor
from cyborg.conf import database
from cyborg.conf import default
from cyborg.conf import drivers
from cyborg.conf import metrics
from cyborg.conf import nic
from cyborg.conf import profiler
from cyborg.conf import security
from cyborg.conf import services

CONF = cfg.CONF

default.register_opts(CONF)
drivers.register_opts(CONF)
nic.register_opts(CONF)
api.register_opts(CONF)
agent.register_opts(CONF)
aio.register_opts(CONF)
conductor.register_opts(CONF)
database.register_opts(CONF)
services.register_opts(CONF)
metrics.register_opts(CONF)
security.register_opts(CONF)
profiler.register_opts(CONF)
