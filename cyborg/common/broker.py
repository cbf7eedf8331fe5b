"""RabbitMQ users and permissions of a cyborg deployment, as
``rabbitmqctl`` commands (printed by ``cyborg-status keys broker``).

What each party declares is :mod:`cyborg.common.rabbit`'s: the
conductors own every name that more than one party uses (the topic
exchange ``control_exchange``, their queues, the heartbeat channel's
queue); an agent and the API declare exchanges passively (which needs no
permission) and configure only names of their own. So:

* a compute host *H* may configure (declare, delete) and read its queue
  ``<prefix>cyborg-agent.H`` and its reply queues
  ``reply_<prefix>host.H.<hex>``, nothing else; bind its queue to the
  topic exchange with its own routing key only, and publish to the topic
  exchange with the conductor's topic or the heartbeat channel's only
  (RabbitMQ's topic permissions);
* it may publish to RabbitMQ's default exchange (``amq.default``), as it
  must to answer the conductor's calls (oslo.messaging sends replies
  there), and through it to any queue it names: the signatures
  (:mod:`cyborg.common.signing`) of requests and replies are what make
  such a message refused;
* the API may configure and read its reply queues ``reply_<prefix>api.<hex>``
  and publish to the topic exchange with the conductor's topic only;
* the conductors have every permission of the vhost.

User names carry a prefix of their own (``<prefix>cyborg-``), so that a
host's user cannot be named like another service's (``nova``) or like
cyborg's API.
"""

import json
import re

from cyborg.common import keys
from cyborg.common import rabbit

CONDUCTOR = 'conductor'
API = 'api'
AGENT = 'agent'

_HEX = r'\.[0-9a-f]+'


def _quote(name):
    return re.escape(name).replace('\\-', '-')


def _any(*names):
    return '^(%s)$' % '|'.join(names)


def user_name(role, hostname=None, prefix=''):
    """The broker user of a conductor, the API or the agent of
    ``hostname``."""
    if role == AGENT:
        keys.host_identity(hostname)
        return '%scyborg-agent.%s' % (prefix, hostname)
    if role in (CONDUCTOR, API):
        return '%scyborg-%s' % (prefix, role)
    raise ValueError('no broker user of role %r' % role)


def _replies(identity, prefix):
    return 'reply_' + _quote(rabbit.reply_owner(identity, prefix)) + _HEX


def permissions(role, hostname=None, exchange='cyborg', prefix=''):
    """``(configure, write, read, topic_write, topic_read)`` regular
    expressions of a broker user of ``role`` (``conductor``, ``api`` or
    ``agent`` of ``hostname``); the topic ones apply to ``exchange``.
    None: no topic permission is needed (the user has all)."""
    ex = _quote(exchange)
    conductor = _quote(prefix + 'cyborg-conductor')
    if role == CONDUCTOR:
        return '.*', '.*', '.*', None, None
    if role == API:
        replies = '^%s$' % _replies(keys.API, prefix)
        return replies, '^%s$' % ex, replies, '^%s$' % conductor, '^$'
    if role != AGENT:
        raise ValueError('no broker user of role %r' % role)
    own = '%s\\.%s' % (_quote(prefix + 'cyborg-agent'), _quote(hostname))
    replies = _replies(keys.host_identity(hostname), prefix)
    heartbeat = _quote(prefix + 'cyborg-heartbeat')
    return (_any(own, replies), _any(ex, r'amq\.default', own),
            _any(ex, own, replies), _any(conductor, heartbeat),
            '^%s$' % own)


#: What the RPC queues may hold: a host may publish to the conductors'
#: topic, and to any queue through the default exchange; beyond these a
#: publisher is refused (``reject-publish``), nothing queued is dropped.
QUEUE_BOUNDS = {'max-length': 100000, 'max-length-bytes': 256 * 1024 * 1024,
                'overflow': 'reject-publish'}


def policy(prefix=''):
    """``(name, pattern, definition)`` of the RabbitMQ policy that bounds
    the conductors' and the agents' RPC queues (the heartbeat channel's
    queue bounds itself)."""
    pattern = '^(%s(\\..+)?|%s\\..+)$' % (
        _quote(prefix + 'cyborg-conductor'), _quote(prefix + 'cyborg-agent'))
    return prefix + 'cyborg-rpc-bounds', pattern, json.dumps(
        QUEUE_BOUNDS, sort_keys=True, separators=(',', ':'))


def commands(user, role, hostname=None, exchange='cyborg', prefix='',
             vhost='/'):
    """The ``rabbitmqctl`` argument lists that give ``user`` (made with
    ``rabbitmqctl add_user``) the permissions of ``role`` on ``vhost``;
    with the conductors', the policy that bounds the RPC queues."""
    configure, write, read, topic_write, topic_read = permissions(
        role, hostname, exchange, prefix)
    result = [['set_permissions', '-p', vhost, user, configure, write, read]]
    if topic_write is not None:
        result.append(['set_topic_permissions', '-p', vhost, user, exchange,
                       topic_write, topic_read])
    if role == CONDUCTOR:
        name, pattern, definition = policy(prefix)
        result.append(['set_policy', '-p', vhost, '--apply-to', 'queues',
                       name, pattern, definition])
    return result
