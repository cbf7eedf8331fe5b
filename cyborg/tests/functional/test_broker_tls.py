"""cyborg speaks TLS to RabbitMQ, and checks whom it speaks to.

On a RabbitMQ node of the test's own whose daemons know only its TLS
port, with ``[oslo_messaging_rabbit] ssl`` and the CA that signed the
broker's certificate, the conductor and an agent run as processes: the
agent says hello and is up, its report is in the database, and its
heartbeats come through the heartbeat channel (which connects with
kombu, not oslo.messaging). An agent, and the heartbeat channel's
consumer, given another CA do not connect, and say why. The broker
lists every connection it has as TLS.

``OverTLS`` puts any test on ``test_daemons._Daemons`` on such a node.
"""

import logging
import os
import ssl
import types

import fixtures
import oslo_messaging as messaging
from oslo_messaging._drivers import impl_rabbit

from cyborg.api import health
from cyborg.common import heartbeats
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.functional import faults
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs

GPU = '0000:3b:00.0'
#: What an agent or the heartbeat channel logs when the broker's
#: certificate is not signed by the CA it was given.
UNVERIFIED = 'CERTIFICATE_VERIFY_FAILED'


def _register_rabbit_opts(conf):
    rpc.register_opts(conf)
    conf.register_opts(impl_rabbit.rabbit_opts,
                       group='oslo_messaging_rabbit')


class OverTLS:
    """For a ``test_daemons._Daemons`` test: its daemons reach a private
    RabbitMQ node (``self.rabbit``) on its TLS port only, verifying the
    broker with the node's CA (or ``ca_file(host)``)."""

    def broker_url(self):
        self.rabbit = faults.PrivateRabbit.started(self, tls=True)
        return self.rabbit.tls_url

    def ca_file(self, host):
        return self.rabbit.ca_file

    def config(self, name, host, **sections):
        sections.setdefault('oslo_messaging_rabbit',
                            self.rabbit.tls_options(self.ca_file(host)))
        return super().config(name, host, **sections)


class BrokerTLSTest(OverTLS, test_daemons._Daemons, base.TestCase):

    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        suffix = os.path.basename(self.tmp)[-8:]
        self.host = 'tls-%s' % suffix
        # Given a CA that did not sign the broker's certificate.
        self.stranger = 'stranger-%s' % suffix
        self.wrong_ca = faults.CertificateAuthority(self.tmp, 'wrong')
        self.placement = self.useFixture(placement_fixture.Placement(
            self.conf))
        self.tree = sysfs.SysfsTree(os.path.join(self.tmp, 'sysfs'))
        self.tree.add_card('tesla_t4', GPU)
        self.placement.create_compute_node(self.host, remove_after=True)

    def ca_file(self, host):
        if host == self.stranger:
            return self.wrong_ca.path
        return super().ca_file(host)

    def config(self, name, host, **sections):
        sections.setdefault('placement', {
            'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': self.placement.endpoint})
        sections.setdefault('conductor', {}).update(
            host_down_timeout=60, heartbeat_flush_interval=1)
        if name == 'agent-%s.conf' % self.host:
            sections['agent'] = {'rescan_interval': 1,
                                 'sysfs_root': self.tree.root,
                                 'enabled_drivers': 'nvidia_gpu_driver'}
        return super().config(name, host, **sections)

    def reported(self):
        """The agent's report is in the database and in Placement."""
        with db_api.reader.using(self.ctx) as session:
            host = session.query(models.Host).filter_by(
                hostname=self.host).one_or_none()
            devices = session.query(models.Device).filter_by(
                hostname=self.host).count()
        return (host is not None and host.status == 'up' and devices == 1
                and host.report_generation
                and host.synced_generation == host.report_generation)

    def last_seen(self):
        return db_hosts.get_by_hostname(self.ctx, self.host)[0].last_seen_at

    def channel(self, ca_file):
        """The heartbeat channel's consumer in this process, as the
        conductor's (its queue, its options), verifying with
        ``ca_file``; what it heard."""
        _register_rabbit_opts(self.conf)
        self.flags(transport_url=self.transport_url, control_exchange='cyborg',
                   rpc_topic_prefix='test-%s-' % os.path.basename(self.tmp))
        self.flags(ssl=True, ssl_ca_file=ca_file,
                   group='oslo_messaging_rabbit')
        heard = []
        consumer = heartbeats.Consumer(
            self.conf, keys.KeyStore(self.key_dir),
            lambda hostname, sent: heard.append(hostname))
        consumer.start()
        self.addCleanup(consumer.join, 5)
        self.addCleanup(consumer.stop)
        return consumer, heard

    def connections(self):
        """``(ssl, user, peer port)`` of each of the broker's
        connections."""
        lines = self.rabbit.ctl('-q', '--no-table-headers',
                                'list_connections', 'ssl', 'user',
                                'peer_port').splitlines()
        return [tuple(line.split('\t')) for line in lines if line]

    def test_daemons_speak_tls_and_verify_the_broker(self):
        conductor = self.start('conductor', 'ctl-1')
        agent = self.start('agent', self.host)
        stranger = self.start('agent', self.stranger)
        wait_for(self.reported, timeout=60, interval=0.5)
        self.assertIn('Registered with the conductor as %s' % self.host,
                      agent.output())

        # The heartbeat channel: the conductor reads it over TLS, the
        # agent sends there (never falling back to RPC), and a consumer
        # of the channel here hears the agent's heartbeats.
        self.assertIn('Reading heartbeats from queue test-%s-%s' % (
            os.path.basename(self.tmp), heartbeats.HEARTBEAT_TOPIC),
            conductor.output())
        consumer, heard = self.channel(self.rabbit.ca_file)
        self.assertTrue(consumer.consuming.wait(20))
        wait_for(lambda: self.host in heard, timeout=20, interval=0.2)
        consumer.stop()
        # The API's /healthcheck reaches the broker the same way.
        available, reason, details = health.BrokerCheck(self.conf,
                                                        {}).probe()
        self.assertEqual((True, 'broker: OK'), (available, reason), details)
        seen = self.last_seen()
        wait_for(lambda: self.last_seen() > seen, timeout=20, interval=0.5)
        self.assertNotIn('sending the heartbeat by RPC', agent.output())

        # The broker holds only TLS connections: the conductor's (RPC and
        # the channel) and the agent's.
        connections = self.connections()
        self.assertGreaterEqual(len(connections), 3, connections)
        self.assertEqual({'true'}, {c[0] for c in connections},
                         connections)

        # With another CA, the channel's consumer does not connect ...
        log = self.useFixture(fixtures.FakeLogger(
            name=heartbeats.__name__, level=logging.WARNING))
        consumer, heard = self.channel(self.wrong_ca.path)
        wait_for(lambda: UNVERIFIED in log.output, timeout=20, interval=0.2)
        self.assertFalse(consumer.consuming.is_set())
        available, reason, details = health.BrokerCheck(self.conf,
                                                        {}).probe()
        self.assertEqual((False, 'broker: unreachable'),
                         (available, reason))
        self.assertIn(UNVERIFIED, details)
        # ... nor does the agent: it is not registered, and says why.
        wait_for(lambda: UNVERIFIED in stranger.output(), timeout=20,
                 interval=0.5)
        self.assertIsNone(self.status(self.stranger))
        self.assertTrue(stranger.running())


class SslOptionsTest(base.TestCase):
    """The heartbeat channel's TLS settings are those oslo.messaging's
    rabbit driver makes of the same options."""

    def oslo(self):
        """What ``impl_rabbit.Connection._fetch_ssl_params`` returns for
        ``self.conf`` (the attributes its __init__ sets from it)."""
        rabbit = self.conf.oslo_messaging_rabbit
        url = messaging.TransportURL.parse(self.conf, self.conf.transport_url)
        # The broker's name when the URL names one host: oslo.messaging 18
        # verifies it (_get_ssl_server_hostname); 17 (the pin of OpenStack
        # 2026.1) verifies no name, and cyborg's heartbeat channel checks
        # it all the same, as 18 does.
        server_hostname = getattr(
            impl_rabbit.Connection, '_get_ssl_server_hostname',
            lambda url: url.hosts[0].hostname if len(url.hosts) == 1
            else None)(url)
        connection = types.SimpleNamespace(
            ssl=rabbit.ssl, ssl_version=rabbit.ssl_version,
            ssl_key_file=rabbit.ssl_key_file,
            ssl_cert_file=rabbit.ssl_cert_file,
            ssl_ca_file=rabbit.ssl_ca_file,
            ssl_server_hostname=server_hostname,
            validate_ssl_version=impl_rabbit.Connection.validate_ssl_version)
        params = impl_rabbit.Connection._fetch_ssl_params(connection)
        if isinstance(params, dict) and 'ca_certs' in params:
            params.setdefault('server_hostname', server_hostname)
        return params

    def test_as_oslo_messaging(self):
        _register_rabbit_opts(self.conf)
        one = 'rabbit://u:p@broker.example.org:5671/'
        two = 'rabbit://u:p@b1:5671,u:p@b2:5671/'
        cases = [
            (one, {}),
            (one, {'ssl': True}),
            (one, {'ssl': True, 'ssl_ca_file': '/ca.pem'}),
            (two, {'ssl': True, 'ssl_ca_file': '/ca.pem'}),
            (one, {'ssl': True, 'ssl_ca_file': '/ca.pem',
                   'ssl_cert_file': '/c.pem', 'ssl_key_file': '/k.pem',
                   'ssl_version': 'TLSv1_2'}),
            (two, {'ssl': True, 'ssl_version': 'sslv23'}),
        ]
        for url, options in cases:
            for name in ('ssl', 'ssl_ca_file', 'ssl_cert_file',
                         'ssl_key_file', 'ssl_version'):
                self.conf.clear_override(name, group='oslo_messaging_rabbit')
            self.flags(transport_url=url)
            self.flags(group='oslo_messaging_rabbit', **options)
            self.assertEqual(self.oslo(), heartbeats.ssl_options(self.conf),
                             (url, options))

    def test_the_broker_and_its_name_are_verified(self):
        _register_rabbit_opts(self.conf)
        self.flags(transport_url='rabbit://u:p@broker.example.org:5671/')
        self.flags(ssl=True, ssl_ca_file='/ca.pem',
                   group='oslo_messaging_rabbit')
        options = heartbeats.ssl_options(self.conf)
        self.assertEqual((ssl.CERT_REQUIRED, 'broker.example.org'),
                         (options['cert_reqs'], options['server_hostname']))
