"""Microversions of the v2 API: the one list of versions, and parsing.

A client asks for a version with ``OpenStack-API-Version: accelerator X.Y``
(the API-WG form), ``latest``, or nothing (the minimum). A bare ``X.Y`` is
accepted too because older clients send it. Every new microversion is one
line in ``VERSIONS`` and one section in
``doc/source/contributor/rest_api_version_history.rst``.
"""

import microversion_parse
from oslo_log import log as logging
import webob.headers

from cyborg.common import exception
from cyborg.i18n import _

LOG = logging.getLogger(__name__)

SERVICE_TYPE = 'accelerator'
HEADER = 'OpenStack-API-Version'
MIN_HEADER = 'OpenStack-API-Minimum-Version'
MAX_HEADER = 'OpenStack-API-Maximum-Version'
LATEST = 'latest'

# (version, what it changed). Append only; the last entry is the maximum.
VERSIONS = [
    ('2.0', 'Initial v2 API with microversion support.'),
    ('2.1', 'PATCH /v2/accelerator_requests accepts /project_id.'),
    ('2.2', 'GET /v2/device_profiles/{name_or_uuid} accepts a name.'),
    ('2.3', 'Devices show their status (enabled or maintaining).'),
    ('2.4', 'List endpoints take limit, marker, sort_key and sort_dir and '
            'return a next link.'),
    ('2.5', 'Generic-driver operations: /v2/hosts, /v2/drivers, '
            '/v2/services, /v2/discovery and /v2/attachments.'),
    ('2.6', 'GET /v2/hardware: every PCI function the drivers looked at, '
            'offered or not and why.'),
]

MIN_VERSION = microversion_parse.parse_version_string(VERSIONS[0][0])
MAX_VERSION = microversion_parse.parse_version_string(VERSIONS[-1][0])


def _bare_value(headers):
    """The header's value when it is a bare ``X.Y`` or ``latest``.

    microversion-parse only understands ``<service> <version>``; a value
    without a service type is the older form some clients still send.
    """
    value = (headers.get(HEADER) or '').strip()
    if not value or ' ' in value or ',' in value:
        return None
    LOG.debug('Deprecated bare %s header value %r; send "%s %s".',
              HEADER, value, SERVICE_TYPE, value)
    return value


def _not_acceptable(reason):
    return exception.InvalidAPIVersion(reason=reason)


def parse(headers):
    """The version a request asks for, as a comparable ``Version``.

    ``headers`` is a case-insensitive mapping such as webob's headers.
    Raises ``InvalidAPIVersion`` (406) for unparsable or unsupported values.
    """
    value = microversion_parse.get_version(headers, SERVICE_TYPE)
    if value is None:
        value = _bare_value(headers)
    if value is None:
        return MIN_VERSION
    if value.strip().lower() == LATEST:
        return MAX_VERSION
    try:
        version = microversion_parse.parse_version_string(value)
    except TypeError as exc:
        raise _not_acceptable(
            _('Invalid %(header)s value %(value)r; expected "%(service)s '
              'X.Y".') % {'header': HEADER, 'value': value,
                          'service': SERVICE_TYPE}) from exc
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise _not_acceptable(
            _('Version %(version)s is not supported by the API. Minimum is '
              '%(min)s and maximum is %(max)s.') % {
                'version': version, 'min': MIN_VERSION, 'max': MAX_VERSION})
    return version


#: The header in a WSGI environ.
ENVIRON_KEY = 'HTTP_' + HEADER.upper().replace('-', '_')


def parse_environ(environ):
    """``parse`` of a WSGI request's headers. A request without the
    header (Nova sends none) is the minimum at once: microversion-parse
    would fold every header of the request only to find it missing."""
    if ENVIRON_KEY not in environ:
        return MIN_VERSION
    return parse(webob.headers.EnvironHeaders(environ))


def response_headers(version=None):
    """Headers every v2 response carries; ``version`` is the one served
    (None when the request's version was not acceptable)."""
    headers = [(MIN_HEADER, str(MIN_VERSION)), (MAX_HEADER, str(MAX_VERSION))]
    if version is not None:
        headers.append((HEADER, '%s %s' % (SERVICE_TYPE, version)))
    return headers


def check_resource(resource, since, requested):
    """Raise ``ResourceNeedsMicroversion`` (404) when ``requested`` is
    below ``since`` ("X.Y"), the version that added ``resource``."""
    if requested < microversion_parse.parse_version_string(since):
        raise exception.ResourceNeedsMicroversion(
            resource=resource, version=since, requested=requested)


def is_supported(request, version):
    """True when ``request`` asked for ``version`` ("X.Y") or later.

    Controllers use this to switch behaviour that a microversion changed.
    """
    wanted = microversion_parse.parse_version_string(version)
    return request.version >= wanted
