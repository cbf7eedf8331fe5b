"""Serve upstream Cyborg's API for the end-to-end adoption scenario.

Run with the Python of an OpenStack Cyborg virtualenv (it imports
upstream's ``cyborg``, never ours), as

    python upstream_api.py CONFIG_FILE PORT

Upstream's ``cyborg-api`` console script cannot start on oslo.service's
threading backend, so its pecan application is served here by the
standard library's threading WSGI server on 127.0.0.1:PORT, behind a
small identity filter in place of keystonemiddleware: ``X-Auth-Token:
<user>:<project>`` names the caller (user ``admin`` has the admin role,
others member and reader) and any ``X-Service-Token`` adds the service
role, as cyborg's own noauth does; identity headers already there win.
"""

import socketserver
import sys
from wsgiref import simple_server


def identity(app):
    def filtered(environ, start_response):
        token = environ.get('HTTP_X_AUTH_TOKEN', '')
        user, _, project = token.partition(':')
        if user:
            roles = 'admin,member,reader' if user == 'admin' else (
                'member,reader')
            for key, value in (('HTTP_X_USER_ID', user),
                               ('HTTP_X_PROJECT_ID', project),
                               ('HTTP_X_ROLES', roles)):
                environ.setdefault(key, value)
            if environ.get('HTTP_X_SERVICE_TOKEN'):
                environ.setdefault('HTTP_X_SERVICE_ROLES', 'service')
                environ['HTTP_X_ROLES'] += ',service'
            environ.setdefault('HTTP_X_IDENTITY_STATUS', 'Confirmed')
        return app(environ, start_response)
    return filtered


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write('access: %s\n' % (fmt % args))


def main(config_file, port):
    from cyborg.api import app
    from cyborg.common import service

    service.prepare_service(['cyborg-api', '--config-file', config_file])
    server = simple_server.make_server(
        '127.0.0.1', int(port), identity(app.setup_app()),
        server_class=_Server, handler_class=_Quiet)
    server.serve_forever()


if __name__ == '__main__':
    main(*sys.argv[1:])
