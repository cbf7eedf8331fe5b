"""Options of the [aio] group: the all-in-one (cyborg-aio)."""

from oslo_config import cfg

GROUP = cfg.OptGroup('aio', title='Options for the all-in-one cyborg-aio')

AUTO = 'auto'
CYBORG = 'cyborg'
NOVA = 'nova'

opts = [
    cfg.StrOpt(
        'compute_node_provider', default=AUTO, choices=[
            (AUTO, 'nova when a Nova is configured ([nova] auth_type or '
                   'endpoint_override), cyborg otherwise'),
            (CYBORG, 'the all-in-one creates the provider at start, for a '
                     'cloud without Nova'),
            (NOVA, 'nova-compute creates it; the all-in-one never does')],
        help='Who creates the compute node resource provider (named '
             '[agent] resource_provider_name) that the accelerators\' '
             'providers hang under. A nova-compute on the same host must '
             'create it itself (it refuses one made by someone else, and '
             'then offers no VCPU, memory or disk), so with Nova the '
             'all-in-one leaves it to Nova, and its conductor hangs the '
             'accelerators under it once it exists.'),
]


# The command line of cyborg-aio (not in config files). ``--host`` is the
# address to listen on, not the [DEFAULT] host name, hence its dest.
DEFAULT_STATE_DIR = '~/.local/state/cyborg-aio'
cli_opts = [
    cfg.HostAddressOpt('host', dest='bind_host', metavar='ADDRESS',
                       default='127.0.0.1',
                       help='Address to listen on (default: 127.0.0.1).'),
    cfg.PortOpt('port', default=6666,
                help='Port to listen on (default: 6666; 0: any free '
                     'port).'),
    cfg.StrOpt('state-dir', metavar='DIR', default=DEFAULT_STATE_DIR,
               help='Where the databases and the agent\'s state live; one '
                    'all-in-one at a time (default: %s).'
                    % DEFAULT_STATE_DIR),
    cfg.StrOpt('sysfs-root', metavar='DIR',
               help='A directory that stands for /sys (a captured tree), '
                    'or a capture file (cyborg-agent --capture).'),
]


def register_cli_opts(conf):
    """The options of cyborg-aio's command line."""
    conf.register_cli_opts(cli_opts)


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
