"""Options of the [database] group (on top of oslo.db's)."""

from oslo_config import cfg
from oslo_db import options as db_options

opts = [
    cfg.StrOpt('mysql_engine', default='InnoDB',
               help='MySQL engine of the tables cyborg creates.'),
]

DEFAULT_CONNECTION = 'sqlite:///$state_path/cyborg.sqlite'


def register_opts(conf):
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)
    conf.register_opts(opts, group='database')


def list_opts():
    return {'database': opts}
