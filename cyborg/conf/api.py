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
        'max_request_header_size', default=65536, min=1024,
        help='Largest request line plus headers, in bytes, that the '
             'standalone API server reads; a request with more is '
             'answered 431 before any authentication. Keystone tokens '
             '(Fernet) take a few hundred bytes.'),
    cfg.IntOpt(
        'max_request_header_count', default=100, min=10,
        help='Most header lines in one request; more is answered 400.'),
    cfg.FloatOpt(
        'idle_timeout', default=5.0, min=0.1,
        help='Seconds the standalone API server keeps a connection that '
             'has sent no byte of a request: a new one, or a kept-alive '
             'one between requests. It is then closed without an answer. '
             'Keep it shorter than header_timeout: idle connections cost '
             'less time than requests on their way.'),
    cfg.FloatOpt(
        'header_timeout', default=10.0, min=0.1,
        help='Seconds a client has, from the first byte of a request, to '
             'send its request line and headers; a slower one is answered '
             '408 and disconnected. Incomplete headers are gathered '
             'without holding a request thread.'),
    cfg.FloatOpt(
        'body_timeout', default=30.0, min=0.1,
        help='Seconds a client has, from the end of its request headers, '
             'to send the whole body; a slower one is answered 408 and '
             'disconnected. A body of at most [oslo_middleware] '
             'max_request_body_size bytes is gathered without holding a '
             'request thread; one the API reads itself (a larger one, or '
             'one sent after "100 Continue") or one discarded after the '
             'answer gets the same time in all.'),
    cfg.IntOpt(
        'max_connections', default=400, min=1,
        help='Most client connections one API worker process holds open '
             'at once (idle keep-alive connections included); one more '
             'is answered 503 and closed.'),
    cfg.IntOpt(
        'max_connections_per_client', default=100, min=0,
        help='Most of max_connections that one client address holds at '
             'once in one cyborg-api worker process (an IPv6 client '
             'counts by its /64); one more from it is answered 503 and '
             'closed. 0: no such limit, as behind a proxy that connects '
             'from one address (limit each client at the proxy then). '
             'The all-in-one, whose own conductor is among its clients, '
             'has no such limit.'),
    cfg.IntOpt(
        'connection_reserve', default=100, min=0,
        help='The last connections of max_connections, kept for client '
             'addresses that hold none: once a cyborg-api worker process '
             'holds max_connections minus this many, a client that holds '
             'one or more is answered 503, so that a flood from a few '
             'addresses leaves every other client a connection. 0 behind '
             'a proxy that connects from one address. Not in the '
             'all-in-one.'),
    cfg.IntOpt(
        'max_discarded_body_size', default=16 * 1024 * 1024, min=0,
        help='Largest request body, in bytes, that the standalone API '
             'server reads and discards when the API answered without '
             'reading it (413 for a body over [oslo_middleware] '
             'max_request_body_size, for one), so that a client that '
             'sends its whole body before reading the answer can read '
             'it; it must arrive within body_timeout. A larger unread '
             'body closes the connection at once.'),
    cfg.ListOpt(
        'service_token_roles', default=['service'],
        help='Roles of a service token (X-Service-Token, as Nova sends '
             'it) that make a request a service\'s, which binding and '
             'unbinding accelerator requests needs. Other roles of the '
             'token, admin included, do not.'),
    cfg.IntOpt(
        'max_limit', default=1000, min=1,
        help='Largest number of items a list request returns in one page.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
