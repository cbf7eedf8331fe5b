"""A paste filter for nova-api in place of keystonemiddleware's authtoken.

Nova 33 has no ``auth_strategy = noauth2`` any more, so the end-to-end
test's nova-api runs this instead of ``authtoken``, in front of Nova's own
``keystonecontext``. It takes the caller's word, like cyborg's noauth
mode: ``X-Auth-Token: <user>[:<project>]`` becomes the identity headers
keystonemiddleware would set (user ``admin`` gets the admin, member and
reader roles, anyone else member and reader), and a non-empty
``X-Service-Token`` the ``service`` role. For tests on loopback only.

Runs inside Nova's virtualenv: standard library only.
"""

ADMIN_ROLES = 'admin,member,reader'
USER_ROLES = 'member,reader'


class NoAuth:

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        token = environ.get('HTTP_X_AUTH_TOKEN', '')
        user, _sep, project = token.partition(':')
        if not user:
            start_response('401 Unauthorized',
                           [('Content-Type', 'text/plain')])
            return [b'X-Auth-Token: <user>[:<project>] is needed\n']
        environ.update({
            'HTTP_X_IDENTITY_STATUS': 'Confirmed',
            'HTTP_X_USER_ID': user,
            'HTTP_X_USER_NAME': user,
            'HTTP_X_PROJECT_ID': project or user,
            'HTTP_X_PROJECT_NAME': project or user,
            'HTTP_X_ROLES': ADMIN_ROLES if user == 'admin' else USER_ROLES,
        })
        if environ.get('HTTP_X_SERVICE_TOKEN'):
            environ['HTTP_X_SERVICE_ROLES'] = 'service'
        return self.app(environ, start_response)


def filter_factory(global_conf, **local_conf):
    return NoAuth
