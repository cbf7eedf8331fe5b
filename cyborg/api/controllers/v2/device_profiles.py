"""``/v2/device_profiles``: list, show, create, delete.

Wire format as upstream's: POST takes a list with one profile and answers
201 with the bare profile; GET one wraps it in ``device_profile``; a name
in the path needs microversion 2.2; ``DELETE ?value=n1,n2`` deletes by
names. Unlike upstream, a missing name or group is a 400, deleting is
all-or-nothing, and a profile ARQs use is a 409.
"""

from oslo_utils import uuidutils
import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api import microversion
from cyborg.api import pagination
from cyborg.api.schemas import device_profiles as schema
from cyborg.api import validation
from cyborg.common import exception
from cyborg.common import profile_groups
from cyborg.db import device_profiles as db_device_profiles
from cyborg.i18n import _
from cyborg import policies

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


def validated(body):
    """The values to create from a POST body valid against
    ``schemas.device_profiles.CREATE``; 400 for a bad group."""
    profile = body[0] if isinstance(body, list) else body
    values = {key: profile.get(key) for key in FIELDS}
    values['groups'] = [profile_groups.normalize_group(g)
                        for g in profile['groups']]
    return values


class DeviceProfileController:
    """``/v2/device_profiles/{uuid_or_name}``."""

    def __init__(self, ident):
        self.ident = ident

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        request = pecan.request
        context = common.authorize(policies.DEVICE_PROFILE_GET_ONE)
        by_name = microversion.is_supported(request, NAME_LOOKUP_VERSION)
        if not by_name and not uuidutils.is_uuid_like(self.ident):
            raise exception.InvalidAPIVersion(
                reason=_('Looking a device profile up by name needs '
                         'microversion %s.') % NAME_LOOKUP_VERSION)
        row = db_device_profiles.get(context, self.ident, by_name=by_name)
        return {'device_profile': view(request, row)}

    @index.when('DELETE')
    def index_delete(self):
        context = common.authorize(policies.DEVICE_PROFILE_DELETE)
        names = validation.path_value('value', self.ident,
                                      schema.DELETE_QUERY)
        pecan.request.conductor_api.device_profile_delete(context, names)
        pecan.response.status = 204


class DeviceProfilesController:
    """``/v2/device_profiles``."""

    index = common.methods()

    @index.when('GET')
    def index_get(self, **_ignored):
        request = pecan.request
        context = common.authorize(policies.DEVICE_PROFILE_GET_ALL)
        names = validation.query(request, schema.LIST_QUERY).get('name')
        page = pagination.page_from(request, db_device_profiles.SORT_KEYS)
        rows = db_device_profiles.get_all(context, names=names, page=page)
        return pagination.collection(request, 'device_profiles',
                                     [view(request, row) for row in rows],
                                     page)

    @index.when('POST')
    def index_post(self):
        request = pecan.request
        context = common.authorize(policies.DEVICE_PROFILE_CREATE)
        values = validated(validation.body(request, schema.CREATE))
        uuid = request.conductor_api.device_profile_create(context, values)
        row = db_device_profiles.get(context, uuid, by_name=False)
        body = view(request, row)
        common.created(body['links'][0]['href'])
        return body

    @index.when('DELETE')
    def index_delete(self, **_ignored):
        request = pecan.request
        context = common.authorize(policies.DEVICE_PROFILE_DELETE)
        names = validation.query(request, schema.DELETE_QUERY)['value']
        request.conductor_api.device_profile_delete(context, names)
        pecan.response.status = 204

    @pecan.expose()
    def _lookup(self, ident, *remainder):
        return DeviceProfileController(ident), list(remainder)
