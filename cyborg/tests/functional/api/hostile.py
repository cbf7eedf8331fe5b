"""What the hostile-input sweep and the fuzz test share: a world with
one of everything to aim at, the routes with a valid request for each,
and a way to send raw requests and see whether they wrote anything.

The world is the fake driver's card on one host, reported through the
conductor into the database and a real Placement, a real agent with the
fake driver serving that host, a stand-in Nova and Glance (with one
image), a device profile, an ARQ, an attribute and a v1 accelerator. A
route's ``{id}`` is the uuid (or name) of the world's object of that
kind, so valid requests reach as far into the service as they can.

The conductor and the agent serve RPC without their periodic tasks, so
every database write happens inside a request: a rejected request that
left a row changed is caught by ``send``.
"""

import json
from urllib import parse
import uuid

import fixtures
from keystoneauth1 import loading as ks_loading
import oslo_messaging as messaging
import sqlalchemy as sa
import webob

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.agent import manager as agent_manager
from cyborg.common import rpc
from cyborg.common import service
from cyborg.conductor import manager as conductor_manager
from cyborg.db import models
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import routes
from cyborg.tests.functional.api import test_deployables
from cyborg.tests.functional import glance
from cyborg.tests.functional import nova

WRITES = ('INSERT', 'UPDATE', 'DELETE', 'REPLACE')
PROFILE = 'fuzz-fpga'
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
INSTANCE = '0f3c5a7e-9b1d-4f2a-8c6e-1a2b3c4d5e6f'
LATEST = '2.5'
ADMIN_NOVA = dict(base.ADMIN, **{'X-Service-Roles': 'service'})


def serve(test, manager, topic, host):
    """``manager``'s endpoints on ``topic``, without its periodic tasks."""
    target = messaging.Target(topic=rpc.topic(test.conf, topic),
                              server=host)
    server = rpc.get_server(target, service.endpoints(manager))
    server.start()
    test.addCleanup(server.wait)
    test.addCleanup(server.stop)
    return manager


class World(test_deployables.Inventory, base.APIResourceTestCase):
    """The base of the sweep and the fuzz test."""

    def start_conductor(self):
        return serve(self, conductor_manager.ConductorManager(
            base.CONDUCTOR_HOST, self.conf), rpc.CONDUCTOR_TOPIC,
            base.CONDUCTOR_HOST)

    # A sweep sends a thousand requests or so; on a loaded machine that
    # takes longer than the usual limit of a test.
    TIMEOUT = 600

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(self.TIMEOUT, gentle=True))
        self.flags(rpc_response_timeout=10)
        self.glance = glance.FakeGlance().start(self)
        self.image = self.glance.add(data=b'bitstream')['id']
        self.nova = nova.StandInNova().start(self)
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='nova')
        self.flags(group='nova', **self.nova.config())
        self.host = 'host-%s' % uuid.uuid4().hex[:8]
        self.flags(host=self.host)
        self.seed(fake_driver.FakeDriver(self.conf).discover(), self.host)
        serve(self, agent_manager.AgentManager(self.host, self.conf),
              rpc.AGENT_TOPIC, self.host)
        self.ids = self._make_objects()
        self.writes = []
        sa.event.listen(self.db.engine, 'after_cursor_execute',
                        self._record_write)

    def _created(self, response):
        self.assertIn(response.status_int, (200, 201), response.body)
        return response

    def _make_objects(self):
        """{route prefix: the id its ``{id}`` stands for}."""
        profile = self._created(self.post('/v2/device_profiles', [
            {'name': PROFILE, 'groups': [GROUP]}])).json
        [arq] = self._created(self.post(
            '/v2/accelerator_requests',
            {'device_profile_name': PROFILE})).json['arqs']
        [deployable] = self.rows(models.Deployable)
        [device] = self.rows(models.Device)
        attribute = self._created(self.post('/v2/attributes', {
            'deployable_id': deployable.id, 'key': 'owner',
            'value': 'fuzz'})).json
        location = self._created(self.post(
            '/v1/accelerators', {'name': 'fuzz-acc'})).headers['Location']
        accelerator = location.rsplit('/', 1)[1]
        return {'/v2/device_profiles': profile['uuid'],
                '/v2/accelerator_requests': arq['uuid'],
                '/v2/deployables': deployable.uuid,
                '/v2/devices': device.uuid,
                '/v2/attributes': attribute['uuid'],
                '/v2/hosts': self.host,
                '/v2/drivers': 'fake_driver',
                '/v2/attachments': INSTANCE,
                '/v1/accelerators': accelerator,
                '/v1/accelerator': accelerator,
                'deployable_id': deployable.id,
                'image': self.image,
                'rp_uuid': deployable.rp_uuid}

    def _record_write(self, _conn, cursor, statement, *_args):
        """Write statements that changed rows (-1: the driver cannot
        tell)."""
        if (statement.lstrip().upper().startswith(WRITES)
                and cursor.rowcount != 0):
            self.writes.append(statement)

    def path_of(self, route, ident=None):
        """The route's path with its ``{id}`` filled in: ``ident``
        (already URL-encoded) or the world's object."""
        if routes.PLACEHOLDER not in route.path:
            return route.path
        prefix = route.path.split('/' + routes.PLACEHOLDER)[0]
        if ident is None:
            ident = parse.quote(str(self.ids[prefix]), safe='')
        return route.path.replace(routes.PLACEHOLDER, ident)

    def send(self, method, path, body=b'', query='', headers=None,
             content_type='application/json', version=LATEST):
        """One raw request as admin with a service token; ``body`` bytes
        (or a document, sent as JSON), ``query`` an encoded query
        string. Returns (response, write statements it caused)."""
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        if query:
            path += '?' + query
        request = webob.Request.blank(path, method=method,
                                      base_url='http://localhost')
        request.headers.update(ADMIN_NOVA if headers is None else headers)
        if version:
            request.headers['OpenStack-API-Version'] = (
                'accelerator %s' % version)
        if body:
            request.body = body
            request.content_type = content_type
        self.settle()
        before = self.snapshot()
        del self.writes[:]
        response = request.get_response(self.app)
        self.settle()
        if response.status_int >= 400 and self.writes and (
                self.snapshot() == before):
            # Written and undone: a workflow that failed late (an attach
            # whose bind failed deletes its ARQs again) leaves no trace.
            return response, []
        return response, list(self.writes)

    def settle(self):
        """Wait for the Nova events the conductor sends after a bind
        commits (off the request path): their writes belong to the
        request that caused them, not to the next one."""
        self.assertTrue(self.conductor.binding.events.wait_idle(60),
                        'the Nova events were never sent')

    def snapshot(self):
        """Every row of every table."""
        with self.db.engine.connect() as connection:
            return {table.name: sorted(map(tuple, connection.execute(
                table.select()).all()), key=repr)
                for table in models.Base.metadata.sorted_tables}

    def assert_no_5xx_and_no_write_when_rejected(self, what, response,
                                                 writes):
        self.assertLess(response.status_int, 500, '%s: %s %s' % (
            what, response.status, response.body[:500]))
        if response.status_int >= 400:
            self.assertEqual([], [w[:80] for w in writes],
                             '%s was rejected (%s %s) but wrote' % (
                                 what, response.status, response.body[:300]))
