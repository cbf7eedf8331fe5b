"""RabbitMQ users and permissions of a cyborg deployment, as
``rabbitmqctl`` commands (printed by ``cyborg-status keys broker``).

With oslo.messaging's rabbit driver (``use_queue_manager = False``, the
default) cyborg's RPC uses: the topic exchange named by
``control_exchange`` (``cyborg``), with the queues ``<topic>`` and
``<topic>.<server>``; a fanout exchange ``<topic>_fanout`` with a queue
``<topic>_fanout_<hex>`` per server; and a direct exchange and queue
``reply_<hex>`` per process that makes calls. A compute host may
declare, bind and read only its own queues, and publish to the topic
exchange only with the conductor's topic or its heartbeat channel's
(``cyborg-heartbeat``, :mod:`cyborg.common.heartbeats`) as routing key
(RabbitMQ's topic permissions): it cannot read another host's queue.
It may publish to RabbitMQ's default exchange (``amq.default``), as it
must to answer the conductor's calls (oslo.messaging sends replies
there), and through it to any queue it names: the signatures
(:mod:`cyborg.common.signing`) are what make another host's agent refuse
such a message. The conductors have every permission; the API may
publish only to the conductor's topic.
"""

import re

REPLY = r'reply_[0-9a-f]+'


def _quote(name):
    return re.escape(name).replace('\\-', '-')


def _any(*names):
    return '^(%s)$' % '|'.join(names)


def permissions(role, hostname=None, exchange='cyborg', prefix=''):
    """``(configure, write, read, topic_write, topic_read)`` regular
    expressions of a broker user of ``role`` (``conductor``, ``api`` or
    ``agent`` of ``hostname``); the topic ones apply to ``exchange``.
    None: no topic permission is needed (the user has all)."""
    ex = _quote(exchange)
    conductor = _quote(prefix + 'cyborg-conductor')
    if role == 'conductor':
        return '.*', '.*', '.*', None, None
    if role == 'api':
        names = _any(ex, REPLY)
        return names, names, names, '^%s$' % conductor, '^$'
    agent = _quote(prefix + 'cyborg-agent')
    own = '%s\\.%s' % (agent, _quote(hostname))
    fanout_queue = agent + r'_fanout_[0-9a-f]+'
    configure = _any(ex, agent, own, agent + '_fanout', fanout_queue, REPLY)
    write = _any(ex, agent, own, fanout_queue, REPLY, r'amq\.default')
    heartbeat = _quote(prefix + 'cyborg-heartbeat')
    return (configure, write, configure,
            '^(%s|%s)$' % (conductor, heartbeat),
            '^%s(\\.%s)?$' % (agent, _quote(hostname)))


def commands(user, role, hostname=None, exchange='cyborg', prefix='',
             vhost='/'):
    """The ``rabbitmqctl`` argument lists that give ``user`` (made with
    ``rabbitmqctl add_user``) the permissions of ``role``."""
    configure, write, read, topic_write, topic_read = permissions(
        role, hostname, exchange, prefix)
    result = [['set_permissions', '-p', vhost, user, configure, write, read]]
    if topic_write is not None:
        result.append(['set_topic_permissions', '-p', vhost, user, exchange,
                       topic_write, topic_read])
    return result
