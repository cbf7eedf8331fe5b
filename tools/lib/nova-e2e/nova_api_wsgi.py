"""nova-api's WSGI application for gunicorn in the end-to-end test.

``nova.wsgi.osapi_compute`` parses ``sys.argv`` as Nova's own command
line when it is imported, and gunicorn's arguments are not Nova options,
so they are set aside while it loads. Its configuration comes from
``OS_NOVA_CONFIG_DIR`` (``nova.conf`` and ``api-paste.ini`` there).

Runs inside Nova's virtualenv: no cyborg imports.
"""

import sys

_argv = sys.argv
sys.argv = ['nova-api']
try:
    from nova.wsgi import osapi_compute
finally:
    sys.argv = _argv

application = osapi_compute.application
