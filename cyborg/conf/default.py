"""Options of the [DEFAULT] group."""

import os
import socket

from oslo_config import cfg

service_opts = [
    cfg.HostDomainOpt(
        'host', default=socket.gethostname(), sample_default='<hostname>',
        help='Name of this host. The agent listens for RPC on this name and '
             'reports its devices under it; the conductor uses it as its '
             'RPC server name.'),
    cfg.StrOpt(
        'rpc_topic_prefix', default='',
        help='Prefix of the RPC topics cyborg uses ("cyborg-conductor", '
             '"cyborg-agent"). Lets several cyborg deployments, or test '
             'runs, share one message broker without receiving each '
             'other\'s messages; all services of one deployment must use '
             'the same value. A separate virtual host is the better choice '
             'where the broker allows it.'),
    cfg.IntOpt(
        'periodic_interval', default=60, min=1,
        help='Seconds between runs of slow periodic tasks.'),
]

path_opts = [
    cfg.StrOpt(
        'state_path', default='/var/lib/cyborg',
        help='Directory where cyborg keeps its state: the SQLite database of '
             'the all-in-one, the agent state file.'),
    cfg.StrOpt(
        'pybasedir',
        default=os.path.abspath(os.path.join(os.path.dirname(__file__),
                                             '..')),
        sample_default='<site-packages>/cyborg',
        help='Directory where the cyborg python module is installed.'),
]

auth_opts = [
    cfg.StrOpt(
        'auth_strategy', default='keystone',
        choices=[('keystone', 'Validate tokens with keystonemiddleware.'),
                 ('noauth', 'No token validation. Identity is taken from '
                            'the X-User-Id, X-Project-Id and X-Roles '
                            'headers, or from a "<user>[:<project>]" '
                            'X-Auth-Token. For tests and the all-in-one '
                            'only.')],
        help='How the API authenticates requests.'),
]

exc_log_opts = [
    cfg.BoolOpt(
        'fatal_exception_format_errors', default=False,
        help='Raise when an exception message cannot be formatted; for '
             'tests.'),
]

ALL_OPTS = service_opts + path_opts + auth_opts + exc_log_opts


def register_opts(conf):
    conf.register_opts(ALL_OPTS)


def list_opts():
    return {'DEFAULT': ALL_OPTS}
