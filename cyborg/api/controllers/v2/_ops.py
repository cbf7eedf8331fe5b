"""What the generic-driver resources of microversion 2.5 share."""

import pecan

from cyborg.api.controllers import common
from cyborg.api import microversion

VERSION = '2.5'


def authorize(rule):
    """404 below 2.5 (the resource does not exist there), then the
    policy check; returns the context."""
    if not microversion.is_supported(pecan.request, VERSION):
        pecan.abort(404)
    return common.authorize(rule)
