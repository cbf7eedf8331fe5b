"""The broker is part of the trust boundary: a compromised compute host,
with its broker user exactly as ``cyborg-status keys broker`` prints it
(on a vhost) and its own key, cannot reshape the broker, read or answer
what is meant for others, replay what it saw, read a token, or flood the
conductors. Each attempt is named in the output with what stopped it;
afterwards the hosts still report, heartbeat and bind.

Over a plain listener and over TLS only (the daemons verifying the
broker's certificate).
"""

import json
import math
import os
import time
import uuid

from amqp import exceptions as amqp_exceptions
from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.common import context
from cyborg.common import heartbeats
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.functional import test_host_identity
from cyborg.tests.functional.test_hello import wait_for

#: What the API's caller holds: it must never leave the API.
TOKEN = 'gAAAAA-the-cloud-admins-token-%s' % uuid.uuid4().hex
#: The heartbeat channel's routing key (the agents' topic permission).
HEARTBEAT_KEY = 'cyborg-heartbeat'
#: What RabbitMQ answers a user lacking a permission.
ACCESS_REFUSED = 403


def _envelope(message):
    """An oslo.messaging message as it travels (envelope 2.0)."""
    return {'oslo.version': '2.0', 'oslo.message': json.dumps(message)}


class _BrokerBoundary(test_host_identity.CompromisedHost):

    def setUp(self):
        super().setUp()
        # A second conductor, for the replays.
        self.conductor2 = self.start('conductor', 'ctl-2')
        wait_for(lambda: 'Started ConductorManager' in
                 self.conductor2.output(), timeout=60)
        self.api_keys = keys.KeyStore(self.key_dir).keys(keys.API)
        self.host_a_key = keys.read(os.path.join(self.tmp, 'on-hostA',
                                                 'own.key'))

    # Bookkeeping: every attempt says what it tried and what stopped it.

    def attempt(self, what, outcome):
        print('ATTEMPT %-62s %s' % (what, outcome))

    def refused_by_broker(self, what, operation):
        """``operation(channel)`` as hostA's user is refused by RabbitMQ."""
        with self.kombu('hostA') as connection:
            channel = connection.channel()
            try:
                operation(channel)
            except amqp_exceptions.AccessRefused as e:
                self.assertEqual(ACCESS_REFUSED, e.code)
                self.attempt(what, 'refused by the broker (403)')
                return
            self.fail('%s: the broker let hostA do it' % what)

    def queues(self):
        return self.rabbitmqctl('list_queues', '-p', self.vhost, '-q',
                                'name').split()

    def arq_count(self):
        with db_api.reader.using(self.ctx) as session:
            return session.execute(sa.select(sa.func.count()).select_from(
                models.ExtendedAcceleratorRequest)).scalar()

    def publish(self, user, routing_key, body, exchange=''):
        with self.kombu(user, transport_options={
                'confirm_publish': True}) as connection:
            connection.Producer().publish(
                body, exchange=exchange, routing_key=routing_key,
                serializer='json')

    def take(self, user, queue, count, timeout=30):
        """``count`` raw messages from ``queue``, read as ``user``."""
        taken = []
        deadline = time.monotonic() + timeout
        with self.kombu(user) as connection:
            channel = connection.channel()
            while len(taken) < count and time.monotonic() < deadline:
                message = channel.basic_get(queue, no_ack=True)
                if message is None:
                    time.sleep(0.2)
                    continue
                taken.append(message.body)
        self.assertEqual(count, len(taken), 'messages on %s' % queue)
        return [json.loads(json.loads(body)['oslo.message'])
                for body in taken]

    def api_context(self):
        """The context of an admin's API request, token and all."""
        return context.RequestContext(
            auth_token=TOKEN, user_id='admin', project_id='admin',
            roles=['admin'], is_admin=True)

    # The attempts.

    def reshape_the_broker(self):
        shared_exchanges = ('cyborg', 'cyborg-agent_fanout',
                            'cyborg-conductor_fanout')
        for name in shared_exchanges:
            self.refused_by_broker(
                'exchange.delete %s' % name,
                lambda ch, name=name: ch.exchange_delete(name))
            self.refused_by_broker(
                'exchange.declare %s as a fanout' % name,
                lambda ch, name=name: ch.exchange_declare(name, 'fanout'))
        heartbeat_queue = [q for q in self.queues()
                           if q.startswith('cyborg-heartbeat')]
        self.assertEqual(1, len(heartbeat_queue), self.queues())
        for name in ['cyborg-conductor', 'cyborg-conductor.ctl-1',
                     'cyborg-agent.hostB'] + heartbeat_queue:
            self.refused_by_broker(
                'queue.delete %s' % name,
                lambda ch, name=name: ch.queue_delete(name))
            self.refused_by_broker(
                'queue.declare %s' % name,
                lambda ch, name=name: ch.queue_declare(name, durable=False))
        self.refused_by_broker(
            'queue.bind cyborg-agent.hostA to hostB\'s routing key',
            lambda ch: ch.queue_bind('cyborg-agent.hostA', 'cyborg',
                                     'cyborg-agent.hostB'))

    def read_others_replies(self):
        # Every reply queue but hostA's own: the conductors' (one asks
        # hostB's agent for a discovery now), the API's (the test's API
        # client made calls) and hostB's agent's.
        api = self.client('cyborg-api', keys.KeyStore(self.key_dir),
                          keys.API, 'cyborg-conductor')
        [summary] = api.call(self.ctx, 'discover_hosts', hostname='hostB',
                             timeout=20)
        self.assertEqual('reported', summary['status'])
        others = [q for q in self.queues() if q.startswith('reply_')
                  and not q.startswith('reply_host.hostA.')]
        owners = {q.split('.')[0] for q in others}
        self.assertTrue({'reply_conductor', 'reply_api',
                         'reply_host'} <= owners, others)
        for name in others:
            self.refused_by_broker('basic.get %s' % name,
                                   lambda ch, name=name: ch.basic_get(name))
            self.refused_by_broker(
                'basic.consume %s' % name,
                lambda ch, name=name: ch.basic_consume(name,
                                                       callback=print))
            self.refused_by_broker('queue.purge %s' % name,
                                   lambda ch, name=name: ch.queue_purge(name))
            self.refused_by_broker(
                'queue.delete %s' % name,
                lambda ch, name=name: ch.queue_delete(name))

    def read_tokens_on_its_own_queue(self):
        """With hostA's agent stopped, its user reads its own queue while
        an admin installs a driver and runs discovery there."""
        self.agents['hostA'].kill()
        api = self.client('cyborg-api', keys.KeyStore(self.key_dir),
                          keys.API, 'cyborg-conductor')
        admin = self.api_context()
        api.cast(admin, 'driver_install', name='nvidia_gpu_driver',
                 hostname='hostA')
        api.cast(admin, 'discover_hosts', hostname='hostA', timeout=5)
        messages = self.take('hostA', 'cyborg-agent.hostA', 2)
        self.assertEqual({'install_driver', 'discover_now'},
                         {m['method'] for m in messages})
        for message in messages:
            self.assertNotIn(TOKEN, json.dumps(message))
            self.assertNotIn('_context_auth_token', message)
            # Who asked still comes along, for the logs.
            self.assertEqual('admin', message['_context_user'])
        self.attempt('read an admin token on its own queue (driver '
                     'install, discovery)', 'no token on the wire')

    def forge_replies(self):
        """Answer the conductor's calls to hostB: unsigned, and signed
        with hostA's key. The msg ids come from hostB's queue, read with
        the conductor's user as if the broker had let hostA see them."""
        self.agents['hostB'].kill()
        api = self.client('cyborg-api', keys.KeyStore(self.key_dir),
                          keys.API, 'cyborg-conductor')
        for forgery in ('unsigned', 'signed with hostA\'s key'):
            api.cast(self.api_context(), 'discover_hosts',
                     hostname='hostB', timeout=10)
            [call] = self.take('cyborg-conductor', 'cyborg-agent.hostB', 1)
            self.assertTrue(call['_reply_q'].startswith('reply_conductor.'))
            result = {'registered': True, 'devices': 99, 'deployables': 99}
            if forgery != 'unsigned':
                result = signing.sign_reply(
                    self.host_a_key, call['_context_cyborg_auth']['nonce'],
                    result)
            self.publish('hostA', call['_reply_q'], _envelope({
                'result': result, 'failure': None, 'ending': True,
                '_msg_id': call['_msg_id'],
                '_unique_id': uuid.uuid4().hex}))
        wait_for(lambda: 'SECURITY: caller refused RPC discover_now: a '
                 'reply whose signature does not verify' in (
                     self.conductor.output() + self.conductor2.output()),
                 timeout=30)
        logs = self.conductor.output() + self.conductor2.output()
        self.assertIn('SECURITY: caller refused RPC discover_now: an '
                      'unsigned reply', logs)
        self.attempt('answer the conductor for hostB (unsigned, and with '
                     'hostA\'s key)', 'refused by the conductor')

    def relay_a_signed_api_message(self):
        """A signed arq_create of the API's, as an observer of the wire
        saw it, relayed by hostA (through the default exchange, which it
        may write to) to both conductors, then to a restarted one."""
        message = {'method': 'arq_create', 'version': '1.0',
                   'args': {'device_profile_name': self.profile,
                            'project_id': 'p1'}}
        wire = rpc.RequestContextSerializer().serialize_context(
            context.get_admin_context())
        ctxt = signing.sign(self.api_keys, keys.API,
                            signing.target_of('cyborg-conductor'), wire,
                            message)
        raw = dict(message, _unique_id=uuid.uuid4().hex,
                   **{'_context_' + k: v for k, v in ctxt.items()})
        before = self.arq_count()
        for queue in ('cyborg-conductor.ctl-1', 'cyborg-conductor.ctl-2'):
            self.publish('hostA', queue, _envelope(raw))
        wait_for(lambda: self.replays_refused() == 1, timeout=30)
        # The conductor that claimed it may still be making the ARQ when
        # the other has refused it.
        wait_for(lambda: self.arq_count() > before, timeout=30)
        self.assertEqual(before + 1, self.arq_count())
        self.attempt('relay a signed API message to two conductors',
                     'ran once, refused by the other')
        self.conductor.kill()
        self.conductor = self.start('conductor', 'ctl-1')
        wait_for(lambda: 'Started ConductorManager' in
                 self.conductor.output(), timeout=60)
        refused = self.replays_refused()
        self.publish('hostA', 'cyborg-conductor.ctl-1', _envelope(raw))
        wait_for(lambda: self.replays_refused() == refused + 1, timeout=30)
        self.assertEqual(before + 1, self.arq_count())
        self.attempt('relay it again to the restarted conductor',
                     'refused: its nonce is in the database')

    def replays_refused(self):
        return sum(daemon.output().count('replayed message (already taken')
                   for daemon in (self.conductor, self.conductor2))

    def flood_the_heartbeat_channel(self):
        """Each conductor's channel logs the first refusal of a minute in
        full: the NaN heartbeat goes first, to one of them; RabbitMQ
        hands the three huge ones round to both, once both read the
        queue (until then all would go to the one that got the NaN, which
        logs no more of them for a minute)."""
        for daemon in (self.conductor, self.conductor2):
            wait_for(lambda daemon=daemon: 'Reading heartbeats from queue'
                     in daemon.output(), timeout=60)
        # A heartbeat signed with hostA's key whose time is not a number:
        # it would pass a freshness check for good.
        message = {'method': heartbeats.METHOD, 'version': '1.0',
                   'args': {'hostname': 'hostA'}}
        ctxt = signing.sign(self.host_a_key, 'host:hostA',
                            signing.target_of(HEARTBEAT_KEY),
                            {'request_id': 'req-nan'}, message)
        auth = ctxt[signing.AUTH]
        auth['time'] = math.nan
        auth['macs'] = signing._macs(self.host_a_key, signing._digest(
            signing._body(auth, auth['target'], ctxt, message)))
        self.publish('hostA', HEARTBEAT_KEY, _envelope(dict(
            message, **{'_context_' + k: v for k, v in ctxt.items()})),
            exchange='cyborg')
        wait_for(lambda: 'malformed signature' in self.conductor_logs(),
                 timeout=30)
        self.attempt('a heartbeat whose signed time is NaN',
                     'refused by the conductor')
        # Bodies of 32 MiB: refused before they are decoded.
        huge = 'x' * (32 * 1024 * 1024)
        for _ in range(3):
            self.publish('hostA', HEARTBEAT_KEY, huge, exchange='cyborg')
        wait_for(lambda: 'byte cap' in self.conductor_logs(), timeout=60)
        self.assertTrue(self.conductor.running())
        self.assertTrue(self.conductor2.running())
        self.attempt('flood the heartbeat channel with 3 x 32 MiB',
                     'refused before decoding; conductors unharmed')
        # And the conductors' RPC topic, which hostA may publish to.
        self.publish('hostA', 'cyborg-conductor',
                     'x' * (5 * 1024 * 1024), exchange='cyborg')
        wait_for(lambda: 'over [security] max_message_bytes' in
                 self.conductor_logs(), timeout=60)
        self.attempt('a 5 MiB message to the conductors\' topic',
                     'dropped unread by the conductor')

    def conductor_logs(self):
        return self.conductor.output() + self.conductor2.output()

    def test_a_compromised_host_can_do_nothing_through_the_broker(self):
        self.addOnException(self.security_lines)
        self.reshape_the_broker()
        self.read_others_replies()
        # First of what the heartbeat channel refuses: it logs the first
        # refusal of a minute in full.
        self.flood_the_heartbeat_channel()
        self.relay_a_signed_api_message()
        self.read_tokens_on_its_own_queue()
        self.forge_replies()
        # And everything still works: both hosts' agents again, their
        # reports and heartbeats, and a bind of the API's ARQ.
        restarted = timeutils.utcnow()
        self.agents = {host: self.start('agent', host)
                       for host in test_host_identity.HOSTS}
        wait_for(lambda: all((self.last_seen(h) or restarted) > restarted
                             for h in test_host_identity.HOSTS), timeout=60)
        wait_for(self.settled, timeout=60)
        self.bind_works()
        self.attempt('afterwards: reports, heartbeats, a bind', 'all work')

    def security_lines(self, _exc_info):
        for daemon in (self.conductor, self.conductor2):
            print('\n'.join(line for line in daemon.output().splitlines()
                            if 'SECURITY' in line or 'heartbeat' in line))

    def last_seen(self, host):
        with db_api.reader.using(self.ctx) as session:
            row = session.query(models.Host).filter(
                models.Host.hostname == host).one()
            return row.last_seen_at

    def bind_works(self):
        api = self.client('cyborg-api', keys.KeyStore(self.key_dir),
                          keys.API, 'cyborg-conductor')
        deployable = self.one(models.Deployable)
        api.call(self.ctx, 'arq_apply_patch', project_id=None, patch={
            self.arq: {'hostname': 'hostB',
                       'device_rp_uuid': self.device_rp(deployable),
                       'instance_uuid': test_host_identity.INSTANCE}})
        wait_for(lambda: self.arq_state() in ('Bound', 'BindFailed'),
                 timeout=60)
        self.assertEqual('Bound', self.arq_state())

    def device_rp(self, deployable):
        _, body = self.placement.get('/resource_providers?name=%s'
                                     % deployable.name)
        return body['resource_providers'][0]['uuid']

    def arq_state(self):
        with db_api.reader.using(self.ctx) as session:
            return session.query(models.ExtendedAcceleratorRequest).filter(
                models.ExtendedAcceleratorRequest.uuid == self.arq
            ).one().state


class BrokerBoundaryTest(_BrokerBoundary, base.TestCase):
    pass


class BrokerBoundaryOverTLSTest(_BrokerBoundary, base.TestCase):
    tls = True
