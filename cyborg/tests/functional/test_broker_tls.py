"""The heartbeat channel's TLS settings are oslo.messaging's."""

import ssl
import types

import oslo_messaging as messaging
from oslo_messaging._drivers import impl_rabbit

from cyborg.common import heartbeats
from cyborg.common import rpc
from cyborg.tests import base


def _register_rabbit_opts(conf):
    rpc.register_opts(conf)
    conf.register_opts(impl_rabbit.rabbit_opts,
                       group='oslo_messaging_rabbit')


class SslOptionsTest(base.TestCase):
    """The heartbeat channel's TLS settings are those oslo.messaging's
    rabbit driver makes of the same options."""

    def oslo(self):
        """What ``impl_rabbit.Connection._fetch_ssl_params`` returns for
        ``self.conf`` (the attributes its __init__ sets from it)."""
        rabbit = self.conf.oslo_messaging_rabbit
        url = messaging.TransportURL.parse(self.conf, self.conf.transport_url)
        connection = types.SimpleNamespace(
            ssl=rabbit.ssl, ssl_version=rabbit.ssl_version,
            ssl_key_file=rabbit.ssl_key_file,
            ssl_cert_file=rabbit.ssl_cert_file,
            ssl_ca_file=rabbit.ssl_ca_file,
            ssl_server_hostname=impl_rabbit.Connection
            ._get_ssl_server_hostname(url),
            validate_ssl_version=impl_rabbit.Connection.validate_ssl_version)
        return impl_rabbit.Connection._fetch_ssl_params(connection)

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
