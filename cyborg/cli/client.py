"""HTTP to the cyborg API for the ``cyborg`` command line.

One ``Client`` wraps a keystoneauth session and the root URL of the
service (the catalog's endpoint without its version segment, so the same
client reaches ``/v1`` and ``/v2``). A failed request becomes a
``CommandError`` carrying the server's message from the error envelope and
the HTTP status, which the application prints as one line.
"""

import json
import re
from urllib import parse

from keystoneauth1 import exceptions as ks_exc

# The microversion that brought the generic-driver operations.
V2_OPERATIONS = '2.5'
VERSION_HEADER = 'OpenStack-API-Version'
SERVICE_TYPE = 'accelerator'

_VERSION_SEGMENT = re.compile(r'/v\d+(\.\d+)?/*$')


class CommandError(Exception):
    """A failure the command line reports as one line, without traceback."""


def service_root(endpoint):
    """The URL the API's versions hang under: ``endpoint`` without a
    trailing ``/v1`` or ``/v2`` (catalogs register the ``/v2`` URL)."""
    return _VERSION_SEGMENT.sub('', endpoint.rstrip('/'))


def quote(value):
    """``value`` safe as one segment of a URL path."""
    return parse.quote(str(value), safe='')


def _one_line(text):
    return ' '.join(str(text).split())


def error_message(response):
    """What went wrong, from the error envelope of a failed response.

    The envelope is ``{"error_message": "<JSON of a fault>"}`` whose fault
    has ``faultstring``; other JSON shapes and plain text are read as well
    as they can be, and the reason phrase is the last resort.
    """
    try:
        doc = response.json()
    except ValueError:
        doc = None
    message = ''
    if isinstance(doc, dict):
        inner = doc.get('error_message', doc)
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                inner = {'faultstring': inner}
        if isinstance(inner, dict):
            message = inner.get('faultstring') or inner.get('message') or ''
    elif not doc and response.text:
        message = response.text
    message = _one_line(message or response.reason or 'Request failed')
    return '%s (HTTP %d)' % (message, response.status_code)


class Client:
    """Requests to one cyborg API through a keystoneauth session."""

    def __init__(self, session, endpoint):
        self.session = session
        self.root = service_root(endpoint)

    def request(self, method, path, microversion=None, timeout=None,
                **kwargs):
        """The response to ``method root+path``; CommandError if it
        failed. ``microversion`` adds the v2 version header."""
        headers = dict(kwargs.pop('headers', None) or {})
        if microversion:
            headers[VERSION_HEADER] = '%s %s' % (SERVICE_TYPE, microversion)
        if timeout is not None:
            kwargs['timeout'] = timeout
        url = self.root + path
        try:
            response = self.session.request(url, method, headers=headers,
                                            raise_exc=False, **kwargs)
        except ks_exc.ConnectTimeout:
            raise CommandError('No answer from %s %s in time'
                               % (method, url)) from None
        except ks_exc.ConnectFailure:
            raise CommandError('Cannot connect to the accelerator service '
                               'at %s' % self.root) from None
        except ks_exc.ClientException as e:  # auth, catalog, TLS
            raise CommandError(_one_line(e)) from None
        if response.status_code >= 400:
            raise CommandError(error_message(response))
        return response

    def v1(self, method, path, **kwargs):
        return self.request(method, '/v1' + path, **kwargs)

    def v2(self, method, path, **kwargs):
        """A request at the microversion of the generic-driver
        operations."""
        return self.request(method, '/v2' + path,
                            microversion=V2_OPERATIONS, **kwargs)
