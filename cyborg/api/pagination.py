"""Paging of list endpoints (microversion 2.4): query parameters in, a
``next`` link out.

A list controller calls ``page_from(request, sort_keys)`` with the sort
keys its resource allows, passes the resulting ``Page`` to its database
reader, and builds its body with ``collection(request, name, items,
page)``. Below 2.4 ``page_from`` returns an empty ``Page`` (everything,
in the resource's default order) and ignores the paging parameters, as
upstream does.
"""

from urllib import parse

from oslo_utils import strutils
from oslo_utils import uuidutils

from cyborg.api.controllers import link
from cyborg.api import microversion
from cyborg.common import exception
from cyborg import conf as cyborg_conf
from cyborg.db import pagination
from cyborg.i18n import _

CONF = cyborg_conf.CONF

PAGING_VERSION = '2.4'
PARAMETERS = ('limit', 'marker', 'sort_key', 'sort_dir')


def _limit(value):
    if value is None:
        return CONF.api.max_limit
    try:
        limit = strutils.validate_integer(value, 'limit', min_value=1)
    except ValueError as exc:
        raise exception.InvalidParameterValue(err=str(exc)) from exc
    return min(limit, CONF.api.max_limit)


def _choice(name, value, allowed):
    if value is not None and value not in allowed:
        raise exception.InvalidParameterValue(
            err=_('%(name)s must be one of %(allowed)s, not %(value)r.') % {
                'name': name, 'allowed': ', '.join(sorted(allowed)),
                'value': value})
    return value


def page_from(request, sort_keys):
    """The ``Page`` a list request asks for; 400 on a bad parameter."""
    if not microversion.is_supported(request, PAGING_VERSION):
        return pagination.Page()
    params = request.GET
    marker = params.get('marker')
    if marker is not None and not uuidutils.is_uuid_like(marker):
        raise exception.InvalidParameterValue(
            err=_('marker must be the uuid of an item, not %r.') % marker)
    return pagination.Page(
        limit=_limit(params.get('limit')),
        marker=marker,
        sort_key=_choice('sort_key', params.get('sort_key'), sort_keys),
        sort_dir=_choice('sort_dir', params.get('sort_dir'),
                         (pagination.ASC, pagination.DESC)))


def next_link(request, items, page):
    """The URL of the page after ``items``, or None on the last page."""
    if not page.limit or len(items) < page.limit:
        return None
    query = [(k, v) for k, v in request.GET.items() if k != 'marker']
    query.append(('marker', items[-1]['uuid']))
    return '%s%s?%s' % (link.base_url(request), request.path_info,
                        parse.urlencode(query))


def collection(request, name, items, page):
    """The body of a list response: ``{name: items}``, with ``next``
    when another page follows."""
    body = {name: items}
    following = next_link(request, items, page)
    if following:
        body['next'] = following
    return body
