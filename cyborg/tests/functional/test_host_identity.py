"""A compromised compute host cannot speak for another host, for the API,
or to another host's agent.

On a RabbitMQ node of the test's own, each host has the broker user and
the RPC key an operator gives it (``cyborg-status keys``), and the
conductor and two agents (hostA, hostB) run as processes. From hostA's
broker credentials and key the test sends every conductor method "as
hostB", every conductor method meant for the API, and every agent method
to hostB; the methods are read from the endpoint classes, so a new one is
covered. Each is refused, and the database, Placement and both sysfs
trees are as they were.
"""

import inspect
import os
import shutil
import ssl
import subprocess
import sys

from amqp import exceptions as amqp_exceptions
import fixtures
import kombu
import oslo_messaging as messaging
from oslo_messaging._drivers import impl_rabbit
import sqlalchemy as sa

from cyborg.agent import admin as agent_admin
from cyborg.agent import manager as agent_manager
from cyborg.common import broker
from cyborg.common import context
from cyborg.common import exception
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.conductor import manager as conductor_manager
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests.functional import faults
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs

HOSTS = ('hostA', 'hostB')
GPU = '0000:3b:00.0'
INSTANCE = '0f3c5a7e-9b1d-4f2a-8c6e-1a2b3c4d5e6f'
IMAGE = '8a5d3c1e-2b4f-4e6a-9c8d-7f1e2d3c4b5a'
MDEV = 'b1e0b9b4-1d5c-4a4e-9d1f-3a2b1c0d9e8f'
#: What remove_mdev and create_mdev get as the mdev: the uuid, and paths
#: that would leave the mdev directory if joined unchecked.
MDEV_NAMES = (MDEV, '.', '..', '../../..', '/sys/bus/pci/devices')
#: Not RPC methods, though public: what the services call themselves.
SERVICE_HOOKS = ('init_host', 'del_host', 'periodic_tasks')
#: Columns that heartbeats, and the conductor's renewals of its lease on
#: the periodic checks, move on.
MOVING = ('updated_at', 'last_seen_at', 'expires_at')
#: Tables that every message moves: the nonces the conductors took.
MOVING_TABLES = ('rpc_nonces',)


def rpc_methods(cls):
    """The public methods of an endpoint class: all that oslo.messaging
    would dispatch to, the service hooks included."""
    return sorted(name for name, _ in inspect.getmembers(
        cls, inspect.isfunction) if not name.startswith('_'))


def unwrapped(func, name):
    """The endpoint method under oslo.messaging's expected_exceptions
    (which does not keep its signature)."""
    for cell in func.__closure__ or ():
        inner = cell.cell_contents
        if inspect.isfunction(inner) and inner.__name__ == name:
            return unwrapped(inner, name)
    return func


class _AttackerKeys:
    """hostA's key, whatever identity the attacker signs as."""

    def __init__(self, key_file):
        self.key_file = key_file

    def keys(self, identity):
        return keys.read(self.key_file)


class _NoKeys:
    """No key at all: the attacker sends unsigned messages."""

    def keys(self, identity):
        raise exception.RPCKeyMissing(identity=identity, reason='none')


class CompromisedHost(test_daemons._Daemons):
    """The deployment a compromised host attacks: a private RabbitMQ node
    (over TLS only with ``tls``) whose vhost, users and permissions are
    what ``cyborg-status keys broker`` prints, a conductor and the agents
    of HOSTS, each with its own broker user and key."""

    backend = 'mysql'
    tls = False

    def broker_url(self):
        self.rabbit = faults.PrivateRabbit.started(self, tls=self.tls)
        # On a vhost of its own, as an operator sets it up with the
        # commands cyborg-status keys broker prints.
        self.vhost = 'cyborg-test'
        self.rabbitmqctl('add_vhost', self.vhost)
        self.users = {broker.user_name(broker.CONDUCTOR): (broker.CONDUCTOR,
                                                           None),
                      broker.user_name(broker.API): (broker.API, None)}
        for host in HOSTS:
            self.users[broker.user_name(broker.AGENT, host)] = (
                broker.AGENT, host)
        for user, (role, host) in self.users.items():
            self.rabbitmqctl('add_user', user, 'pw-' + user)
            for command in broker.commands(user, role, host,
                                           vhost=self.vhost):
                self.rabbitmqctl(*command)
        return self.url('cyborg-conductor')

    def rabbitmqctl(self, *args):
        return self.rabbit.ctl(*args)

    def url(self, user):
        """``user`` (a broker user, or a host: its user) on the vhost."""
        if user in HOSTS:
            user = broker.user_name(broker.AGENT, user)
        return self.rabbit.user_url(user, 'pw-' + user) + self.vhost

    def config(self, name, host, **sections):
        sections.setdefault('placement', {
            'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': self.placement.endpoint})
        sections.setdefault('DEFAULT', {}).update(rpc_topic_prefix='')
        sections.setdefault('oslo_messaging_rabbit',
                            self.rabbit.tls_options())
        sections.setdefault('conductor', {}).update(host_down_timeout=600)
        if name.startswith('agent-'):
            # The host's own broker user and its key alone.
            own = os.path.join(self.tmp, 'on-' + host)
            os.makedirs(own, exist_ok=True)
            shutil.copy(os.path.join(self.key_dir, keys.file_name(
                keys.host_identity(host))), os.path.join(own, 'own.key'))
            sections['DEFAULT'].update(transport_url=self.url(host))
            sections['security'] = {'key_dir': own,
                                    'key_file': os.path.join(own, 'own.key')}
            sections['agent'] = {
                'heartbeat_interval': 1, 'rescan_interval': 1,
                'sysfs_root': self.trees[host].root,
                'enabled_drivers': 'nvidia_gpu_driver'}
        return super().config(name, host, **sections)

    def setUp(self):
        super().setUp()
        # A broker node, a conductor and two agents to start, then some
        # hundred refused messages: more than a test's usual two minutes
        # on a loaded machine (a CI run timed out here at load 14).
        self.useFixture(fixtures.Timeout(600, gentle=True))
        self.placement = self.useFixture(placement_fixture.Placement(
            self.conf))
        # The keys, made by the command an operator runs.
        subprocess.run(
            [sys.executable, '-m', 'cyborg.cmd.status', 'keys', 'create',
             '--api', '--host', 'hostA', '--host', 'hostB', '--key-dir',
             self.key_dir], check=True, capture_output=True)
        self.trees = {}
        self.roots = {}
        for host in HOSTS:
            self.trees[host] = sysfs.SysfsTree(os.path.join(self.tmp, host))
            self.trees[host].add_card('tesla_t4', GPU)
            # The names are every such test's: gone at its end.
            self.roots[host] = self.placement.create_compute_node(
                host, remove_after=True)
        self.conductor = self.start('conductor', 'ctl-1')
        self.agents = {host: self.start('agent', host) for host in HOSTS}
        self.ctx = context.get_admin_context()
        wait_for(self.settled, timeout=90)
        rpc.register_opts(self.conf)
        self.conf.set_override('control_exchange', 'cyborg')
        self.conf.register_opts(impl_rabbit.rabbit_opts,
                                group='oslo_messaging_rabbit')
        self.flags(group='oslo_messaging_rabbit', **self.rabbit.tls_options())
        # What the API made: a profile and an ARQ, through RPC with the
        # API's broker user and key.
        api = self.client('cyborg-api', keys.KeyStore(self.key_dir),
                          keys.API, 'cyborg-conductor')
        self.profile = 'identity-test'
        api.call(self.ctx, 'device_profile_create', values={
            'name': self.profile, 'groups': [{'resources:PGPU': '1'}]})
        [self.arq] = api.call(self.ctx, 'arq_create',
                              device_profile_name=self.profile,
                              project_id='p1')

    def settled(self):
        """Both hosts reported, and Placement shows their reports."""
        with db_api.reader.using(self.ctx) as session:
            hosts = session.query(models.Host).all()
            done = sorted(h.hostname for h in hosts if h.report_generation
                          and h.synced_generation == h.report_generation
                          and not h.sync_pending)
        return done == list(HOSTS) and all(
            self.provider_count(h) == 1 for h in HOSTS)

    def provider_count(self, host):
        _, body = self.placement.get('/resource_providers?in_tree=%s'
                                     % self.roots[host]['uuid'])
        return len(body['resource_providers']) - 1

    def client(self, user, key_store, sender, topic, server=None):
        """An RPC client on ``user``'s broker credentials, signing with
        ``key_store`` as ``sender``."""
        transport = rpc.rpc_transport(self.conf, self.identity(user),
                                      url=self.url(user))
        self.addCleanup(transport.cleanup)
        signer = rpc.SigningTransport(transport, sender, key_store,
                                      self.conf)
        target = messaging.Target(topic=topic, server=server, version='1.0')
        return messaging.get_rpc_client(
            signer, target, serializer=rpc.RequestContextSerializer()
        ).prepare(version='1.0', timeout=60)

    def identity(self, user):
        """Who ``user`` (a broker user, or a host) is on RPC."""
        role, host = self.users[self.url(user).split('//')[1].split(':')[0]]
        if role == broker.AGENT:
            return keys.host_identity(host)
        return keys.CONDUCTOR if role == broker.CONDUCTOR else keys.API

    def amqp_url(self, user):
        """``user``'s URL for kombu, without oslo.messaging."""
        return self.url(user).replace('rabbit://', 'amqp://', 1)

    def kombu(self, user, **kwargs):
        """A kombu connection of ``user``'s (TLS as the daemons')."""
        if self.tls:
            kwargs['ssl'] = {'ca_certs': self.rabbit.ca_file,
                             'cert_reqs': ssl.CERT_REQUIRED}
        return kombu.Connection(self.amqp_url(user), **kwargs)

    # What is there, and must stay.

    def world(self):
        rows = {}
        with db_api.reader.using(self.ctx) as session:
            for table in models.Base.metadata.sorted_tables:
                if table.name in MOVING_TABLES:
                    continue
                columns = [c for c in table.columns if c.name not in MOVING]
                rows[table.name] = sorted(
                    tuple(str(v) for v in row)
                    for row in session.execute(sa.select(*columns)))
        _, body = self.placement.get('/resource_providers')
        providers = {}
        for rp in body['resource_providers']:
            _, inventories = self.placement.get(
                '/resource_providers/%s/inventories' % rp['uuid'])
            _, traits = self.placement.get(
                '/resource_providers/%s/traits' % rp['uuid'])
            providers[rp['name']] = (rp['parent_provider_uuid'],
                                     inventories['inventories'],
                                     sorted(traits['traits']))
        return {'database': rows, 'placement': providers,
                'sysfs': {h: self.files(t.root)
                          for h, t in self.trees.items()}}

    @staticmethod
    def files(root):
        found = {}
        for directory, _dirs, names in os.walk(root):
            for name in names:
                path = os.path.join(directory, name)
                if os.path.islink(path):
                    found[path] = os.readlink(path)
                    continue
                with open(path, 'rb') as f:
                    found[path] = f.read()
        return found

    # The arguments a forged message carries: each names hostB's things.

    def values(self):
        device = self.one(models.Device)
        deployable = self.one(models.Deployable)
        return {
            'hostname': 'hostB', 'devices': [], 'hardware': [],
            'report_hash': 'forged', 'report_seq': 2 ** 40,
            'hello': host_obj.AgentHello(hostname='hostB', status='READY',
                                         endpoint='hostB', version='1',
                                         drivers=[]),
            'values': {'name': 'forged', 'groups': [{'resources:PGPU': '1'}]},
            'uuids': [self.profile], 'device_profile_name': self.profile,
            'profile_name': self.profile, 'project_id': None,
            'patch': {self.arq: {'hostname': 'hostB',
                                 'device_rp_uuid': self.roots['hostB']['uuid'],
                                 'instance_uuid': INSTANCE}},
            'arq_uuids': [self.arq], 'instance_uuid': INSTANCE,
            'deployable_uuid': deployable.uuid, 'image_uuid': IMAGE,
            'device_uuid': device.uuid, 'status': 'maintaining',
            'deployable_id': deployable.id, 'key': 'k', 'value': 'v',
            'name': 'nvidia_gpu_driver', 'driver_name': 'nvidia_gpu_driver',
            'controlpath_id': {'cpid_type': 'PCI', 'cpid_info': GPU},
            'pci_address': GPU, 'mdev_type': 'nvidia-222',
            'mdev_uuid': MDEV, 'timeout': 5,
            'mdevs': [{'pci_address': GPU, 'mdev_type': 'nvidia-222',
                       'mdev_uuid': name} for name in MDEV_NAMES],
        }

    def one(self, model):
        with db_api.reader.using(self.ctx) as session:
            query = session.query(model)
            if model is models.Deployable:
                query = query.join(models.Device,
                                   models.Device.id == model.device_id)
            return query.filter(models.Device.hostname == 'hostB').one()

    def calls(self, cls, values):
        """``(method, kwargs)`` of every method of ``cls``; remove_mdev
        and create_mdev once per name in MDEV_NAMES."""
        for method in rpc_methods(cls):
            params = [name for name in inspect.signature(
                unwrapped(getattr(cls, method), method)).parameters
                if name not in ('self', 'context')]
            kwargs = {name: values.get(name, 'x') for name in params}
            for mdev in (MDEV_NAMES if 'mdev_uuid' in kwargs else [MDEV]):
                if 'mdev_uuid' in kwargs:
                    kwargs = dict(kwargs, mdev_uuid=mdev)
                yield method, kwargs

    def assertRefused(self, client, method, kwargs, as_whom):
        with signing.sending_as(as_whom):
            error = self.assertRaises(exception.RPCRefused, client.call,
                                      self.ctx, method, **kwargs)
        return error

    def assertUnchanged(self, before, after):
        for part, things in before.items():
            self.assertEqual(sorted(things), sorted(after[part]), part)
            for name, value in things.items():
                self.assertEqual(value, after[part][name],
                                 '%s: %s changed' % (part, name))

    def assertBrokerRefuses(self, method, kwargs):
        """hostA's broker user cannot publish ``method`` where hostB's
        agent reads (the body is what RPC would send; RabbitMQ looks only
        at the exchange and the routing key)."""
        with self.kombu('hostA', transport_options={
                'confirm_publish': True}) as connection:
            self.assertRaises(
                amqp_exceptions.AccessRefused, connection.Producer().publish,
                {'method': method, 'args': {}}, exchange='cyborg',
                routing_key='cyborg-agent.hostB')



class CompromisedHostTest(CompromisedHost, base.TestCase):

    def test_host_a_can_do_nothing_to_host_b_or_for_the_api(self):
        before = self.world()
        values = self.values()
        own_key = os.path.join(self.tmp, 'on-hostA', 'own.key')
        attacker = _AttackerKeys(own_key)
        honest = keys.KeyStore(os.path.join(self.tmp, 'on-hostA'),
                               own_key, 'hostA')
        conductor_topic = self.client('hostA', attacker, keys.API,
                                      'cyborg-conductor')
        # This side sends unsigned where it has no key; the daemons
        # require signatures.
        self.flags(require_signed=False, group='security')
        unsigned = self.client('hostA', _NoKeys(), keys.API,
                               'cyborg-conductor')
        host_methods = []
        for cls in (conductor_manager.ConductorManager,):
            for method, kwargs in self.calls(cls, values):
                func = getattr(cls, method)
                if signing.host_argument(func):
                    host_methods.append(method)
                # Signed as hostA, with hostA's key, about hostB or for
                # the API; then claiming to be hostB or the API.
                for as_whom in ('host:hostA', 'host:hostB', keys.API):
                    self.assertRefused(conductor_topic, method, kwargs,
                                       as_whom)
                self.assertRefused(unsigned, method, kwargs, 'host:hostA')
        self.assertEqual(['agent_heartbeat', 'agent_hello', 'report_data'],
                         sorted(host_methods))
        # hostA signing honestly as itself is still heard ...
        own = self.client('hostA', honest, keys.API, 'cyborg-conductor')
        with signing.sending_as('host:hostA'):
            own.call(self.ctx, 'agent_heartbeat', hostname='hostA')
            # ... but not hang its devices under hostB's compute node.
            self.assertRaises(
                exception.Invalid, own.call, self.ctx, 'agent_hello',
                hello=host_obj.AgentHello(
                    hostname='hostA', status='READY', endpoint='hostA',
                    version='1', drivers=[], resource_provider_name='hostB'))

        # To hostB's agent: the broker does not let hostA's user publish
        # to hostB's topic. It may put a message in hostB's queue through
        # RabbitMQ's default exchange (which agents need to reply), so
        # the agent's check of the signature is what stops it: sent with
        # a broker user that may publish there, hostA's key does not make
        # a message hostB takes.
        stolen_broker = self.client('cyborg-conductor', attacker,
                                    keys.CONDUCTOR, 'cyborg-agent',
                                    server='hostB')
        agent_methods = []
        for cls in (agent_manager.AgentManager, agent_admin.AdminEndpoints):
            for method, kwargs in self.calls(cls, values):
                agent_methods.append(method)
                self.assertBrokerRefuses(method, kwargs)
                for as_whom in (keys.CONDUCTOR, 'host:hostA', keys.API):
                    self.assertRefused(stolen_broker, method, kwargs,
                                       as_whom)
        self.assertIn('remove_mdev', agent_methods)
        # Nor can hostA's user read hostB's queue.
        with self.kombu('hostA') as connection:
            self.assertRaises(amqp_exceptions.AccessRefused,
                              connection.channel().basic_get,
                              'cyborg-agent.hostB')
        self.assertUnchanged(before, self.world())
        # Each receiver logs its first refusal of a minute in full (the
        # others in a summary a minute later): the first came from hostA.
        self.assertRegex(self.conductor.output(),
                         r'SECURITY: conductor refused RPC \w+: .*proven '
                         r'sender host:hostA\)')
        self.assertRegex(self.agents['hostB'].output(),
                         r'SECURITY: agent refused RPC \w+')


class RollingUpgradeTest(test_daemons._Daemons, base.TestCase):
    """During an upgrade ([security] require_signed = False), an agent
    that has no key yet (as one of the release before) registers and is
    heard, and the conductor says so; one with its key signs. Each
    daemon's key directory is its own: the conductor's holds the signed
    host's key only."""

    backend = 'mysql'

    def config(self, name, host, **sections):
        sections['security'] = {'require_signed': 'False',
                                'key_dir': os.path.join(self.tmp, host)}
        return super().config(name, host, **sections)

    def test_unsigned_and_signed_agents_are_heard(self):
        keys.create(os.path.join(self.tmp, 'ctl-1'), 'host:signed')
        shutil.copytree(os.path.join(self.tmp, 'ctl-1'),
                        os.path.join(self.tmp, 'signed'))
        conductor = self.start('conductor', 'ctl-1')
        self.start('agent', 'unsigned')
        self.start('agent', 'signed')
        wait_for(lambda: (self.status('unsigned'), self.status('signed'))
                 == ('up', 'up'), timeout=60)
        self.assertIn('Accepting unsigned RPC messages', conductor.output())
        self.assertNotIn('SECURITY:', conductor.output())
