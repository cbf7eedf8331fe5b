"""Counts and times every API request (``cyborg_api_requests_total``,
``cyborg_api_request_duration_seconds``) by route template, method,
status and microversion.

The route is a template of the URL tree, never the path a client sent:
``/v2/accelerator_requests/{id}`` (an unversioned path, which v2 serves,
counts as v2's); a path outside the tree is ``other``.
So the labels take a bounded set of values whatever clients send.
"""

import time

from cyborg.api.controllers import root
from cyborg.api.controllers import v1
from cyborg.api.controllers import v2
from cyborg.api import microversion
from cyborg.common import metrics

#: Paths served outside the version trees, by their own name.
FIXED = frozenset(('/', '/healthcheck'))
_VERSION_HEADER = microversion.HEADER.lower()


def _resources(controller):
    return frozenset(name for name, value in vars(controller).items()
                     if type(value).__name__.endswith('Controller')
                     or name in ('accelerator',))


#: The first segment below each version that names a resource.
RESOURCES = {root.V1: _resources(v1.V1Controller),
             root.V2: _resources(v2.V2Controller)}


def route_template(path):
    """The route template of ``path`` (a PATH_INFO)."""
    stripped = '/' + path.strip('/')
    if stripped in FIXED:
        return stripped
    version = root.route_version(path)
    if version is None:
        return metrics.OTHER
    segments = [s for s in path.strip('/').split('/') if s]
    if segments[0].removesuffix('.json') == version:
        segments = segments[1:]
        if not segments:
            return '/' + version
    # else an unversioned path of a resource: served as v2's.
    if segments[0] not in RESOURCES[version]:
        return metrics.OTHER
    template = '/%s/%s' % (version, segments[0])
    if len(segments) > 1:
        template += '/{id}'
    if len(segments) > 2:
        template += '/*'
    return template


def _microversion(headers):
    for name, value in headers:
        if name.lower() == _VERSION_HEADER:
            # "accelerator 2.3": a version the API accepted.
            return value.rpartition(' ')[2]
    return ''


class Metrics:
    """The WSGI filter that counts: outside everything else, so what the
    other filters answer (401, 413, the healthcheck) is counted too."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        started = time.monotonic()
        route = route_template(environ.get('PATH_INFO', ''))
        method = metrics.method_label(environ.get('REQUEST_METHOD'))
        seen = {}

        def counting_start_response(status, headers, exc_info=None):
            seen['status'] = status.split(' ', 1)[0]
            seen['version'] = _microversion(headers)
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, counting_start_response)
        finally:
            metrics.count_api_request(
                route, method, seen.get('status', '500'),
                seen.get('version', ''), time.monotonic() - started)
