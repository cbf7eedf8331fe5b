"""The noauth middleware and the public paths of keystone mode."""

import testtools
import webob

from cyborg.api.middleware import auth


def seen_environ(middleware_class, path='/v2/devices', headers=None):
    """The environ the wrapped app receives."""
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        start_response('204 No Content', [])
        return []

    webob.Request.blank(path, headers=headers or {}).get_response(
        middleware_class(app))
    return seen


class NoAuthTest(testtools.TestCase):

    def test_admin_token(self):
        env = seen_environ(auth.NoAuthMiddleware, headers={
            'X-Auth-Token': 'admin'})
        self.assertEqual('admin', env['HTTP_X_USER_ID'])
        self.assertEqual('admin', env['HTTP_X_PROJECT_ID'])
        self.assertEqual('admin,member,reader', env['HTTP_X_ROLES'])
        self.assertEqual('Confirmed', env['HTTP_X_IDENTITY_STATUS'])

    def test_user_and_project_token(self):
        env = seen_environ(auth.NoAuthMiddleware, headers={
            'X-Auth-Token': 'alice:p1'})
        self.assertEqual('alice', env['HTTP_X_USER_ID'])
        self.assertEqual('p1', env['HTTP_X_PROJECT_ID'])
        self.assertEqual('member,reader', env['HTTP_X_ROLES'])

    def test_headers_win_over_the_token(self):
        env = seen_environ(auth.NoAuthMiddleware, headers={
            'X-Auth-Token': 'admin', 'X-Roles': 'reader',
            'X-Project-Id': 'p2', 'X-Service-Roles': 'service'})
        self.assertEqual('admin', env['HTTP_X_USER_ID'])
        self.assertEqual('p2', env['HTTP_X_PROJECT_ID'])
        self.assertEqual('reader', env['HTTP_X_ROLES'])
        self.assertEqual('service', env['HTTP_X_SERVICE_ROLES'])

    def test_service_token_gives_the_service_role(self):
        env = seen_environ(auth.NoAuthMiddleware, headers={
            'X-Auth-Token': 'alice:p1', 'X-Service-Token': 'nova'})
        self.assertEqual('service', env['HTTP_X_SERVICE_ROLES'])
        self.assertEqual('alice', env['HTTP_X_USER_ID'])
        self.assertEqual('member,reader', env['HTTP_X_ROLES'])

    def test_explicit_service_roles_win_over_the_service_token(self):
        env = seen_environ(auth.NoAuthMiddleware, headers={
            'X-Auth-Token': 'alice:p1', 'X-Service-Token': 'nova',
            'X-Service-Roles': 'reader'})
        self.assertEqual('reader', env['HTTP_X_SERVICE_ROLES'])

    def test_no_or_empty_service_token_no_service_role(self):
        for headers in ({'X-Auth-Token': 'alice:p1'},
                        {'X-Auth-Token': 'alice:p1', 'X-Service-Token': ''}):
            env = seen_environ(auth.NoAuthMiddleware, headers=headers)
            self.assertNotIn('HTTP_X_SERVICE_ROLES', env)

    def test_headers_alone(self):
        env = seen_environ(auth.NoAuthMiddleware, headers={
            'X-User-Id': 'u1', 'X-Project-Id': 'p1', 'X-Roles': 'member'})
        self.assertEqual('u1', env['HTTP_X_USER_ID'])
        self.assertEqual('Confirmed', env['HTTP_X_IDENTITY_STATUS'])

    def test_nobody(self):
        env = seen_environ(auth.NoAuthMiddleware)
        self.assertNotIn('HTTP_X_USER_ID', env)
        self.assertEqual('Invalid', env['HTTP_X_IDENTITY_STATUS'])


class PublicPathTest(testtools.TestCase):

    def test_public(self):
        for path in ('', '/', '/v2', '/v2/', '/healthcheck', '/.json',
                     '/v2.json', '/v2/.json', '/healthcheck.json', '/v1',
                     '/v1/', '/v1.json'):
            self.assertTrue(auth.is_public(path), path)

    def test_not_public(self):
        for path in ('/v2/devices', '/devices', '/v2x', '/v22',
                     '/healthcheck/x', '/v1/accelerators', '/v3'):
            self.assertFalse(auth.is_public(path), path)

    def _routes(self, path, headers=None):
        calls = []

        def app(name):
            def call(environ, start_response):
                calls.append((name, dict(environ)))
                start_response('204 No Content', [])
                return []
            return call

        routes = auth.PublicRoutes(app('open'), app('protected'))
        webob.Request.blank(path, headers=headers or {}).get_response(routes)
        return calls[0]

    def test_public_path_skips_auth_and_forged_identity(self):
        name, env = self._routes('/v2', headers={
            'X-Identity-Status': 'Confirmed', 'X-Roles': 'admin',
            'X-User-Id': 'u', 'X-Project-Id': 'p',
            'X-Service-Roles': 'service', 'Accept': 'application/json'})
        self.assertEqual('open', name)
        self.assertTrue(env['is_public_api'])
        for key in ('HTTP_X_IDENTITY_STATUS', 'HTTP_X_ROLES',
                    'HTTP_X_USER_ID', 'HTTP_X_PROJECT_ID',
                    'HTTP_X_SERVICE_ROLES'):
            self.assertNotIn(key, env)
        self.assertEqual('application/json', env['HTTP_ACCEPT'])

    def test_other_paths_are_protected(self):
        name, env = self._routes('/v2/devices')
        self.assertEqual('protected', name)
        self.assertNotIn('is_public_api', env)
