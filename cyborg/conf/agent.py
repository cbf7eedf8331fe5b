"""Options of the [agent] group."""

import socket

from oslo_config import cfg

GROUP = cfg.OptGroup('agent', title='Options for the cyborg agent')

opts = [
    cfg.ListOpt(
        'enabled_drivers', default=['fake_driver'],
        help='Accelerator drivers the agent loads, by entry-point name in '
             'the cyborg.accelerator.driver namespace.'),
    cfg.StrOpt(
        'sysfs_root', default='/sys',
        help='Directory that stands for /sys when drivers read hardware. '
             'Point it at a captured tree to read that instead.'),
    cfg.IntOpt(
        'heartbeat_interval', default=10, min=1,
        help='Seconds between two heartbeats of the agent to the '
             'conductor.'),
    cfg.StrOpt(
        'resource_provider_name', default=socket.getfqdn(),
        sample_default='<fqdn>',
        help='Name of the compute node resource provider in Placement '
             'under which this host\'s accelerators are reported. Falls '
             'back to [DEFAULT] host.'),
    cfg.IntOpt(
        'resource_provider_startup_retries', default=3, min=0,
        help='How often the agent looks for its compute node resource '
             'provider at start before giving up.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
