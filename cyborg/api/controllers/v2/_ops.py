"""What the generic-driver resources of microversion 2.5 share."""

import pecan

from cyborg.api.controllers import common
from cyborg.api import microversion
from cyborg.common import exception
from cyborg.i18n import _

VERSION = '2.5'


def authorize(rule):
    """404 below 2.5 (the resource does not exist there), then the
    policy check; returns the context."""
    if not microversion.is_supported(pecan.request, VERSION):
        pecan.abort(404)
    return common.authorize(rule)


def body_of(request, allowed, required=()):
    """The JSON object body with only ``allowed`` keys, ``required``
    ones present, every value a non-empty string unless a number."""
    body = common.json_body(request)
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise exception.InvalidParameterValue(
            err=_('The body must be a JSON object.'))
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise exception.InvalidParameterValue(
            err=_('Unknown fields: %s.') % ', '.join(unknown))
    missing = [key for key in required if not body.get(key)]
    if missing:
        raise exception.InvalidParameterValue(
            err=_('Missing fields: %s.') % ', '.join(missing))
    return body


def string(body, key):
    value = body.get(key)
    if value is not None and not (isinstance(value, str) and value):
        raise exception.InvalidParameterValue(
            err=_('%s must be a non-empty string.') % key)
    return value
