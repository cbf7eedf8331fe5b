"""``cyborg-status keys``: the keys that sign RPC messages, and the
broker users' commands.

Four commands, each a sub-command of its own with its own options::

    cyborg-status keys create (--api | --host NAME ...) [--key-dir DIR]
    cyborg-status keys rotate (--api | --host NAME ...) [--key-dir DIR]
    cyborg-status keys retire (--api | --host NAME ...) [--key-dir DIR]
    cyborg-status keys broker [--conductor] [--api] [--host NAME ...]

The first three write key files in ``[security] key_dir`` (or
``--key-dir``), and say first where that directory comes from; then a
line per key, saying what was done to it. ``broker`` prints the
``rabbitmqctl`` commands of the broker users on the vhost of
``transport_url``. See doc/source/admin/security.rst. They run under
``cyborg-status`` (:mod:`cyborg.cmd.status`), which reads the
configuration and hands the parsed command to :func:`run`.
"""

import shlex
import sys

from oslo_config import cfg
import oslo_messaging as messaging

from cyborg.common import broker
from cyborg.common import exception
from cyborg.common import keys

PROG = 'cyborg-status keys'


def _create(key_dir, identity):
    path, created = keys.create(key_dir, identity)
    return ('created' if created else 'kept'), path


def _rotate(key_dir, identity):
    return 'rotated', keys.rotate(key_dir, identity)


def _retire(key_dir, identity):
    return 'retired', keys.retire(key_dir, identity)


#: The commands that write keys: {name: (help, function(key_dir,
#: identity) -> (what was done to the key, its file))}.
KEY_COMMANDS = {
    'create': ('make a key for each named that has none (an existing '
               'key is kept)', _create),
    'rotate': ('add a new key for each named; the old and the new are '
               'both used until "retire"', _rotate),
    'retire': ('keep only the newest key of each named', _retire),
}
BROKER_HELP = ('print the rabbitmqctl commands of the broker users of '
               'those named ("cyborg-agent.HOST", "cyborg-api" and '
               '"cyborg-conductor"), on the vhost of transport_url')
HELP = ('make the keys that sign RPC messages (create, rotate, retire) or '
        'print the broker users\' commands (broker)')
DESCRIPTION = ('Make the keys that sign RPC messages: one per compute host '
               '(give it to that host and the conductors) and the API\'s '
               '(give it to the API and the conductors). Each command that '
               'writes keys first says where the key directory comes from. '
               '"cyborg-status keys COMMAND --help" for its options.')


def _add_whose(parser, conductor=False):
    # Their names are not cyborg options' (oslo.config refuses those).
    parser.add_argument('--api', action='store_true', dest='for_api',
                        help="the API's")
    if conductor:
        parser.add_argument('--conductor', action='store_true',
                            dest='for_conductor',
                            help='the conductors\' user')
    parser.add_argument('--host', action='append', default=[],
                        dest='hosts', metavar='HOST',
                        help='a compute host\'s (its [DEFAULT] host); repeat '
                        'for several')


def add_parser(subparsers, conf):
    """Add ``keys`` and its commands to ``subparsers`` (those of
    ``cyborg-status``); the command runs with ``conf`` once read."""
    parser = subparsers.add_parser('keys', help=HELP,
                                   description=DESCRIPTION)
    commands = parser.add_subparsers(
        dest='action', title='commands',
        metavar='{%s}' % ','.join(tuple(KEY_COMMANDS) + ('broker',)))
    commands.required = True
    for name, (text, _function) in KEY_COMMANDS.items():
        command = commands.add_parser(name, help=text, description=text)
        _add_whose(command)
        command.add_argument(
            '--key-dir', help='default: [security] key_dir of the '
            'configuration files (--config-file and --config-dir, before or '
            'after the command)')
    command = commands.add_parser('broker', help=BROKER_HELP,
                                  description=BROKER_HELP)
    _add_whose(command, conductor=True)
    parser.set_defaults(action_fn=lambda: run(conf, conf.command),
                        key_dir=None, for_conductor=False)


def _vhost(conf):
    """The RabbitMQ vhost of ``transport_url`` (``/`` when it names
    none)."""
    try:
        url = messaging.TransportURL.parse(conf, conf.transport_url)
    except messaging.InvalidTransportURL:
        return '/'
    return url.virtual_host or '/'


def broker_lines(args, conf):
    """``rabbitmqctl`` command lines of the users ``args`` names, on the
    vhost of ``transport_url``."""
    roles = ([(broker.CONDUCTOR, None)] if args.for_conductor else [])
    roles += [(broker.API, None)] if args.for_api else []
    roles += [(broker.AGENT, host) for host in args.hosts]
    vhost = _vhost(conf)
    lines = []
    if vhost != '/':
        lines.append(shlex.join(['rabbitmqctl', 'add_vhost', vhost]))
    for role, host in roles:
        user = broker.user_name(role, host, prefix=conf.rpc_topic_prefix)
        lines.append('rabbitmqctl add_user %s <password>' % shlex.quote(user))
        for command in broker.commands(
                user, role, host, exchange=conf.control_exchange,
                prefix=conf.rpc_topic_prefix, vhost=vhost):
            lines.append(shlex.join(['rabbitmqctl'] + command))
    return lines


def key_dir_origin(conf, args):
    """(the key directory, where it comes from: ``--key-dir``, the
    configuration file that sets it, or the default and why)."""
    if args.key_dir:
        return args.key_dir, '--key-dir'
    key_dir = conf.security.key_dir
    where = conf.get_location('key_dir', 'security')
    if where is not None and where.location is cfg.Locations.user:
        return key_dir, '[security] key_dir in %s' % where.detail
    read = list(conf.config_file or [])
    if conf.config_dir:
        read.append('--config-dir %s' % conf.config_dir)
    if read:
        return key_dir, ('the default [security] key_dir: the configuration '
                         'read, %s, does not set it' % ', '.join(read))
    return key_dir, ('the default [security] key_dir: no configuration file '
                     'was read; give --config-file')


def _fail(message, code):
    print('%s: %s' % (PROG, message), file=sys.stderr)
    return code


def _broker(conf, args):
    try:
        print('\n'.join(broker_lines(args, conf)))
    except exception.Invalid as e:
        return _fail(e, 1)
    return 0


def _write_keys(conf, args):
    identities = ([keys.API] if args.for_api else []) + args.hosts
    if not identities:
        return _fail('%s: give --api or --host' % args.action, 2)
    key_dir, origin = key_dir_origin(conf, args)
    print('key directory %s (%s)' % (key_dir, origin))
    _text, function = KEY_COMMANDS[args.action]
    try:
        identities = [i if i == keys.API else keys.host_identity(i)
                      for i in identities]
        for identity in identities:
            print('%s %s' % function(key_dir, identity))
    except (exception.CyborgException, OSError) as e:
        return _fail(e, 1)
    return 0


def run(conf, args):
    """``cyborg-status keys COMMAND ...`` (``args``: the parsed command
    line) with the configuration ``conf`` read: returns the exit code."""
    if args.action == 'broker':
        return _broker(conf, args)
    return _write_keys(conf, args)
