"""``/v2/device_profiles``: list, show, create, delete.

Wire format as upstream's: POST takes a list with one profile and answers
201 with the bare profile; GET one wraps it in ``device_profile``; a name
in the path needs microversion 2.2; ``DELETE ?value=n1,n2`` deletes by
names. Unlike upstream, a missing name or group is a 400, deleting is
all-or-nothing, and a profile ARQs use is a 409.
"""

import re

from oslo_utils import uuidutils
import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api import microversion
from cyborg.api import pagination
from cyborg.common import exception
from cyborg.common import profile_groups
from cyborg.db import device_profiles as db_device_profiles
from cyborg.i18n import _

NAME = re.compile(r'^[a-zA-Z0-9-_]+$')
FIELDS = ('name', 'groups', 'description', 'uuid')
NAME_LOOKUP_VERSION = '2.2'


def view(request, row):
    return {'uuid': row.uuid,
            'name': row.name,
            'description': row.description,
            'groups': db_device_profiles.groups_of(row),
            'created_at': common.timestamp(row.created_at),
            'updated_at': common.timestamp(row.updated_at),
            'links': [link.make_link(request, 'self', 'v2',
                                     'device_profiles', row.uuid)]}


def _invalid(message):
    return exception.InvalidParameterValue(err=message)


def _one_profile(body):
    """The profile of a POST body: a list with exactly one object (a bare
    object is taken too)."""
    if isinstance(body, dict):
        return body
    if not isinstance(body, list) or len(body) != 1 or not isinstance(
            body[0], dict):
        raise _invalid(_('Send a list with exactly one device profile '
                         'object.'))
    return body[0]


def _check_fields(profile):
    unknown = sorted(set(profile) - set(FIELDS))
    if unknown:
        raise _invalid(_('Unknown device profile fields: %s.')
                       % ', '.join(unknown))
    name = profile.get('name')
    if not isinstance(name, str) or not NAME.match(name):
        raise _invalid(_('A device profile needs a name of letters, digits, '
                         '"-" and "_".'))
    description = profile.get('description')
    if description is not None and not isinstance(description, str):
        raise _invalid(_('The description must be a string.'))
    uuid = profile.get('uuid')
    if uuid is not None and not (isinstance(uuid, str)
                                 and uuidutils.is_uuid_like(uuid)):
        raise exception.InvalidUUID(uuid=uuid)


def validated(body):
    """The values to create from a POST body; 400 with what is wrong."""
    profile = _one_profile(body)
    _check_fields(profile)
    groups = profile.get('groups')
    if not isinstance(groups, list) or not groups:
        raise _invalid(_('A device profile needs a non-empty list of '
                         'groups.'))
    values = {key: profile.get(key) for key in FIELDS}
    values['groups'] = [profile_groups.normalize_group(g) for g in groups]
    return values


def _names(value):
    names = [name.strip() for name in value.split(',') if name.strip()]
    if not names:
        raise _invalid(_('Name at least one device profile.'))
    return names


class DeviceProfileController:
    """``/v2/device_profiles/{uuid_or_name}``."""

    def __init__(self, ident):
        self.ident = ident

    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def index_get(self):
        request = pecan.request
        context = common.authorize('cyborg:device_profile:get_one')
        by_name = microversion.is_supported(request, NAME_LOOKUP_VERSION)
        if not by_name and not uuidutils.is_uuid_like(self.ident):
            raise exception.InvalidAPIVersion(
                reason=_('Looking a device profile up by name needs '
                         'microversion %s.') % NAME_LOOKUP_VERSION)
        row = db_device_profiles.get(context, self.ident, by_name=by_name)
        return {'device_profile': view(request, row)}

    @index.when(method='DELETE', template='json')
    def index_delete(self):
        context = common.authorize('cyborg:device_profile:delete')
        pecan.request.conductor_api.device_profile_delete(
            context, _names(self.ident))
        pecan.response.status = 204


class DeviceProfilesController:
    """``/v2/device_profiles``."""

    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def index_get(self, name=None, **_ignored):
        request = pecan.request
        context = common.authorize('cyborg:device_profile:get_all')
        page = pagination.page_from(request, db_device_profiles.SORT_KEYS)
        names = _names(name) if name is not None else None
        rows = db_device_profiles.get_all(context, names=names, page=page)
        return pagination.collection(request, 'device_profiles',
                                     [view(request, row) for row in rows],
                                     page)

    @index.when(method='POST', template='json')
    def index_post(self):
        request = pecan.request
        context = common.authorize('cyborg:device_profile:create')
        values = validated(common.json_body(request))
        uuid = request.conductor_api.device_profile_create(context, values)
        row = db_device_profiles.get(context, uuid, by_name=False)
        body = view(request, row)
        common.created(body['links'][0]['href'])
        return body

    @index.when(method='DELETE', template='json')
    def index_delete(self, value=None, **_ignored):
        context = common.authorize('cyborg:device_profile:delete')
        if value is None:
            raise _invalid(_('Name the profiles to delete: ?value=<uuid> or '
                             '?value=<name>[,<name>...].'))
        pecan.request.conductor_api.device_profile_delete(context,
                                                          _names(value))
        pecan.response.status = 204

    @pecan.expose()
    def _lookup(self, ident, *remainder):
        return DeviceProfileController(ident), list(remainder)
