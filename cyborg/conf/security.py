"""Options of the [security] group: the keys that sign RPC messages."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'security', title='Signed RPC messages',
    help='Every RPC message names its sender (the API, the conductor or '
         'one compute host) and carries an HMAC-SHA256 of its content made '
         'with a key only that sender and the conductors hold. See '
         'doc/source/admin/security.rst.')

opts = [
    cfg.StrOpt(
        'key_dir', default='/etc/cyborg/keys',
        help='The directory of the RPC keys: "api.key" (the API\'s key, '
             'on API and conductor hosts) and "host.<hostname>.key" (one '
             'per compute host, on the conductor hosts). Made by '
             '"cyborg-status keys create". Files are re-read when they '
             'change, so keys rotate without restarts.'),
    cfg.StrOpt(
        'key_file',
        help='The key of this compute host (the agent). Default: '
             '<key_dir>/host.<[DEFAULT] host>.key.'),
    cfg.BoolOpt(
        'require_signed', default=True, mutable=True,
        help='Refuse RPC messages without a signature. Set to False only '
             'during a rolling upgrade from a release that did not sign: '
             'unsigned messages are then accepted (and logged), and a '
             'sender without a key sends unsigned. A message with a '
             'signature that does not verify is refused either way.'),
    cfg.IntOpt(
        'max_message_age', default=300, min=10,
        help='Seconds a signed message stays acceptable after it was sent '
             '(clock skew included); each message is accepted once within '
             'that window.'),
    cfg.IntOpt(
        'max_message_bytes', default=4 * 1024 * 1024, min=65536,
        help='Bytes an RPC message read from RabbitMQ may have: a larger '
             'one is dropped, unread, and logged as a security event. The '
             'largest messages are compute hosts\' reports (some KiB per '
             'device).'),
    cfg.IntOpt(
        'rpc_prefetch', default=64, min=1,
        help='RPC messages RabbitMQ may hand each of a service\'s '
             'consumers before it has taken the earlier ones, when '
             '[oslo_messaging_rabbit] rabbit_qos_prefetch_count is 0 (its '
             'default: no bound).'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
