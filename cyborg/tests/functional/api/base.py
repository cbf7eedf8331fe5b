"""A base for tests of API resources: the whole API pipeline in process
(noauth), a real conductor behind it on in-process messaging (or
RabbitMQ), and a real database (SQLite, MariaDB or PostgreSQL).

Requests name who is calling: ``as_admin`` (admin of project
``PROJECT``), ``as_member`` (member and reader of ``PROJECT``),
``as_other`` (member of ``OTHER_PROJECT``), ``as_reader``, ``as_manager``
or any header set; ``service=True`` adds a service token's roles, as Nova
sends with ``[service_user] send_service_user_token``.
"""

import json
from urllib import parse

from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
import webob

from cyborg.api import app as api_app
from cyborg.common import context as cyborg_context
from cyborg.common import policy
from cyborg.common import rpc
from cyborg.conductor import manager as conductor_manager
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

PROJECT = 'b8d3f5ae4b204c1c9a3f1e0d7c6b5a49'
OTHER_PROJECT = 'f1e2d3c4b5a647389201a2b3c4d5e6f7'
CONDUCTOR_HOST = 'conductor-1'


def identity(user, project, roles):
    return {'X-User-Id': user, 'X-Project-Id': project,
            'X-Roles': ','.join(roles)}


ADMIN = identity('admin', PROJECT, ['admin', 'member', 'reader'])
MEMBER = identity('alice', PROJECT, ['member', 'reader'])
READER = identity('rita', PROJECT, ['reader'])
MANAGER = identity('mona', PROJECT, ['manager', 'member', 'reader'])
OTHER = identity('bob', OTHER_PROJECT, ['member', 'reader'])
NOVA = identity('nova', 'service', ['service', 'admin'])


def fault_of(response):
    """The fault document inside an error response's envelope."""
    assert response.content_type == 'application/json', response.headers
    return json.loads(response.json['error_message'])


class APIResourceTestCase(base.TestCase):
    """Requests through ``setup_app`` to a conductor on ``backend``."""

    backend = 'sqlite'
    messaging = 'fake'
    # True: the database is reached through self.db.gate (faults.TcpGate).
    gated_database = False

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='noauth')
        self.conf.register_opts(cors.OPTS, group='cors')
        self.conf.register_opts(http_proxy_to_wsgi.OPTS,
                                group='oslo_middleware')
        self.db = self.useFixture(cyborg_fixtures.Database(
            self, backend=self.backend, gated=self.gated_database))
        self.messages = self.useFixture(
            cyborg_fixtures.Messaging(self, self.conf, self.messaging))
        policy.reset()
        self.addCleanup(policy.reset)
        self.conductor = self.start_conductor()
        self.context = cyborg_context.get_admin_context()
        self._app = None

    def start_conductor(self):
        """The conductor endpoints, served on the conductor topic."""
        manager = conductor_manager.ConductorManager(CONDUCTOR_HOST,
                                                     self.conf)
        cyborg_fixtures.start_rpc_service(self, manager, rpc.CONDUCTOR_TOPIC,
                                          CONDUCTOR_HOST)
        return manager

    @property
    def app(self):
        """Built on first use, so tests can set flags first."""
        if self._app is None:
            self._app = api_app.setup_app(self.conf)
        return self._app

    def request(self, method, path, body=None, headers=None, version=None,
                service=False, **query):
        """One request; ``body`` is sent as JSON, ``version`` as the
        microversion header, ``query`` as the query string."""
        headers = dict(ADMIN if headers is None else headers)
        if version:
            headers['OpenStack-API-Version'] = 'accelerator %s' % version
        if service:
            headers['X-Service-Roles'] = 'service'
        if query:
            path += ('&' if '?' in path else '?') + parse.urlencode(query)
        request = webob.Request.blank(path, method=method, headers=headers,
                                      base_url='http://localhost')
        if body is not None:
            request.body = json.dumps(body).encode()
            request.content_type = 'application/json'
        return request.get_response(self.app)

    def get(self, path, **kwargs):
        return self.request('GET', path, **kwargs)

    def post(self, path, body=None, **kwargs):
        return self.request('POST', path, body=body, **kwargs)

    def patch(self, path, body=None, **kwargs):
        return self.request('PATCH', path, body=body, **kwargs)

    def delete(self, path, **kwargs):
        return self.request('DELETE', path, **kwargs)

    def assert_error(self, response, status, text=None):
        """``response`` failed with ``status`` and a message (containing
        ``text`` if given) in the envelope clients read."""
        self.assertEqual(status, response.status_int, response.body)
        message = fault_of(response)['faultstring']
        self.assertTrue(message)
        if text is not None:
            self.assertIn(text, message)
        return message
