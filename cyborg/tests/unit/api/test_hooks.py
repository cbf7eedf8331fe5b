"""The request context and the conductor client the hooks provide."""

from unittest import mock

import webob

from cyborg.api import hooks
from cyborg.common import context
from cyborg.common import exception
from cyborg.conductor import rpcapi
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


def environ(**headers):
    return webob.Request.blank('/v2/devices', headers=headers).environ


class MakeContextTest(base.TestCase):

    def test_identity_from_headers(self):
        env = environ(**{'X-User-Id': 'u1', 'X-Project-Id': 'p1',
                         'X-Roles': 'member,reader'})
        env['openstack.request_id'] = 'req-1'
        ctx = hooks.make_context(env)
        self.assertIsInstance(ctx, context.RequestContext)
        self.assertEqual(('u1', 'p1'), (ctx.user_id, ctx.project_id))
        self.assertEqual(['member', 'reader'], ctx.roles)
        self.assertEqual('req-1', ctx.request_id)
        self.assertFalse(ctx.is_admin)
        self.assertFalse(ctx.is_service)

    def test_admin_iff_admin_role(self):
        self.assertTrue(hooks.make_context(
            environ(**{'X-Roles': 'reader,admin'})).is_admin)
        self.assertFalse(hooks.make_context(
            environ(**{'X-Roles': 'administrator'})).is_admin)

    def test_service_roles(self):
        ctx = hooks.make_context(environ(**{'X-Roles': 'member',
                                            'X-Service-Roles': 'service'}))
        self.assertEqual(['service'], ctx.service_roles)
        self.assertTrue(ctx.is_service)
        self.assertTrue(ctx.to_policy_values()['service_roles'])

    def test_only_the_service_role_makes_a_service(self):
        for roles in ('admin', 'member,reader', 'admin,member',
                      'services'):
            self.assertFalse(hooks.make_context(environ(**{
                'X-Roles': 'member', 'X-Service-Roles': roles})).is_service,
                roles)
        self.flags(service_token_roles=['nova_service'], group='api')
        self.assertTrue(hooks.make_context(environ(**{
            'X-Service-Roles': 'reader,nova_service'})).is_service)
        self.assertFalse(hooks.make_context(environ(**{
            'X-Service-Roles': 'service'})).is_service)

    def test_what_is_accepted_crosses_rpc(self):
        self.flags(service_token_roles=['nova_service'], group='api')
        ctx = context.RequestContext.from_dict(hooks.make_context(environ(
            **{'X-Service-Roles': 'nova_service'})).to_dict())
        self.assertTrue(ctx.is_service)


class _State:
    def __init__(self):
        self.request = webob.Request.blank('/v2')


class ConductorAPIHookTest(base.TestCase):

    def test_none_before_messaging_is_set_up(self):
        state = _State()
        hooks.ConductorAPIHook().before(state)
        self.assertIsNone(state.request.conductor_api)

    def test_one_client_per_process(self):
        self.useFixture(cyborg_fixtures.Messaging(self, self.conf))
        hook = hooks.ConductorAPIHook()
        first, second = _State(), _State()
        hook.before(first)
        hook.before(second)
        self.assertIsInstance(first.request.conductor_api,
                              rpcapi.ConductorAPI)
        self.assertIs(first.request.conductor_api,
                      second.request.conductor_api)


class AcceptHookTest(base.TestCase):

    def _route(self, accept=None):
        state = _State()
        if accept is not None:
            state.request.headers['Accept'] = accept
        hooks.AcceptHook().on_route(state)
        return state.request

    def test_json_admitted_is_served_whatever_the_handler_declares(self):
        for accept in (None, 'application/json', '*/*', 'application/*',
                       'text/html,application/xhtml+xml,*/*;q=0.8',
                       'application/json; charset=utf-8'):
            self.assertNotIn('Accept', self._route(accept).headers, accept)

    def test_plain_values_admitted_without_parsing(self):
        with mock.patch('webob.acceptparse.create_accept_header',
                        side_effect=AssertionError('parsed')):
            for accept in (None, 'application/json', '*/*'):
                self.assertNotIn('Accept', self._route(accept).headers,
                                 accept)
        # Any other value is parsed.
        with mock.patch('webob.acceptparse.create_accept_header',
                        side_effect=AssertionError('parsed')):
            self.assertRaises(AssertionError, self._route, 'application/*')

    def test_json_refused_is_406(self):
        for accept in ('text/html', 'application/xml', 'text/*',
                       'application/json;q=0, */*;q=0.5'):
            error = self.assertRaises(exception.JSONNotAccepted,
                                      self._route, accept)
            self.assertEqual(406, error.code)
            self.assertIn(accept, str(error))
