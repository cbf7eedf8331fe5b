"""Options of the [metrics] group: each daemon's Prometheus listener."""

from oslo_config import cfg

GROUP = cfg.OptGroup('metrics', title='Prometheus metrics of this daemon')

opts = [
    cfg.BoolOpt(
        'enabled', default=False,
        help='Serve this daemon\'s metrics in Prometheus\' text format on '
             'http://HOST:PORT/metrics (any path answers). Nothing is '
             'served when False. The listener has no authentication: keep '
             'it on a management network, or on the loopback behind a '
             'proxy of your own. cyborg-api serves it only with '
             '[api] api_workers = 1 (see the metrics page of the admin '
             'guide).'),
    cfg.HostAddressOpt(
        'host', default='127.0.0.1',
        help='Address the metrics listener binds.'),
    cfg.PortOpt(
        'port', default=9464,
        help='Port of the metrics listener. Each daemon on one machine '
             'needs its own.'),
    cfg.IntOpt(
        'gauge_cache_seconds', default=10, min=0,
        help='How long the conductor keeps the gauges it reads from the '
             'database at a scrape (hosts by status, ARQs by state) '
             'before it reads them again: several scrapers, or a short '
             'scrape interval, cost at most one query of each per this '
             'many seconds.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
