"""Options of the [conductor] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup('conductor', title='Options for the cyborg conductor')

opts = [
    cfg.IntOpt(
        'host_down_timeout', default=60, min=1,
        help='Seconds without a hello or heartbeat after which a host is '
             'considered down. Should be several times [agent] '
             'heartbeat_interval.'),
    cfg.IntOpt(
        'liveness_check_interval', default=10, min=1,
        help='Seconds between two checks for hosts that went silent. One '
             'conductor of those sharing the database runs the check (see '
             'periodic_lease_timeout).'),
    cfg.IntOpt(
        'heartbeat_flush_interval', default=5, min=0,
        help='Seconds a conductor keeps the heartbeats it hears in memory '
             'before it writes them: one UPDATE for up to 1,000 hosts '
             'heard, instead of one per heartbeat. A heartbeat of a host '
             'that is down or unknown is acted on at that write. A host '
             'is marked down at most host_down_timeout + '
             'heartbeat_flush_interval + liveness_check_interval seconds '
             'after its last heartbeat, and never while it sends one '
             'every [agent] heartbeat_interval as long as host_down_timeout '
             'exceeds 2 * (heartbeat_interval + heartbeat_flush_interval + '
             'the delivery delay), even when the conductor that heard it '
             'dies before writing (see the admin guide, "Hosts and '
             'liveness"). 0: each heartbeat is written when it arrives.'),
    cfg.IntOpt(
        'periodic_lease_timeout', default=30, min=3,
        help='Seconds for which a conductor that runs the periodic checks '
             'shared by all conductors (silent hosts, stale binds, '
             'pending Placement syncs, expired claims) holds the lease '
             'that lets it run them; it renews it while it runs. Another '
             'conductor takes the checks over once the lease has expired: '
             'at most 4/3 of this plus liveness_check_interval seconds '
             'after the holder died, at its next check after the holder '
             'stopped cleanly.'),
    cfg.BoolOpt(
        'reserve_down_hosts', default=False,
        help='Reserve the whole inventory of a host\'s accelerators in '
             'Placement while the host is down, so that nothing new is '
             'scheduled on a host whose agent went silent; the '
             'reservation is released when the host is heard from again. '
             'Instances already using them are not touched.'),
    cfg.IntOpt(
        'placement_retry_interval', default=30, min=1,
        help='Seconds between two attempts to show in Placement the hosts '
             'whose last sync failed: Placement was down, or the host\'s '
             'compute node provider did not exist yet (with Nova, '
             'nova-compute creates it when it first starts).'),
    cfg.IntOpt(
        'workers', default=16, min=1,
        help='Threads serving RPC requests in one conductor.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
