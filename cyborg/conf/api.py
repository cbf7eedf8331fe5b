"""Options of the [api] group."""

from oslo_config import cfg

GROUP = cfg.OptGroup('api', title='Options for the cyborg API service')

opts = [
    cfg.HostAddressOpt(
        'host_ip', default='127.0.0.1',
        help='Address on which the standalone API server listens.'),
    cfg.PortOpt(
        'port', default=6666,
        help='Port on which the standalone API server listens.'),
    cfg.IntOpt(
        'api_workers', min=1,
        help='Number of API worker processes. Defaults to the number of '
             'CPUs, at most 4. With 1, the cyborg-api process serves '
             'itself; with more, it forks them and restarts one that '
             'dies.'),
    cfg.IntOpt(
        'threads_per_worker', default=16, min=1,
        help='Request-handling threads in each API worker.'),
    cfg.StrOpt(
        'public_endpoint',
        help='Public URL of the API, used in links (for example '
             '"https://cloud.example.com/accelerator"). When unset, links '
             'follow the URL of the request, including any mount prefix.'),
    cfg.BoolOpt(
        'access_log', default=True,
        help='Log one line per API request at INFO: client address, '
             'request line, status, response length and time, with the '
             'request id. Turn it off where a front end (a proxy, '
             'mod_wsgi) logs requests already.'),
    cfg.IntOpt(
        'max_limit', default=1000, min=1,
        help='Largest number of items a list request returns in one page.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
