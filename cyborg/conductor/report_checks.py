"""What an agent's report may hold before the conductor stores it, and
what the conductor sends back to agents from it.

Attach handles and control path ids are JSON text that the conductor
later hands to Nova and sends to agents (``create_mdev``,
``remove_mdev``, ``ensure_mdevs``), whose privileged code acts on them.
Each is checked against a schema when a report arrives: a handle that
does not match is dropped, a device whose control path id does not
match is dropped with its deployables, each with a warning naming the
host. The binding checks the stored values again before it sends them
(:func:`mdev_target`), so nothing it sends comes unchecked even from rows
stored before these checks existed.

A deployable's name is unique across hosts and names its Placement
resource provider; agents name deployables ``<host>_<address>``
(:func:`cyborg.accelerator.common.records.deployable_name`, the fake
driver ``<host>_FakeDevice``). A deployable whose name does not start
with the reporting host's (the proven sender's) ``<host>_`` is dropped
with a warning, so that no host can take another host's name first and
make that host's reports fail on the unique name. Dropped rather than
refusing the whole report, as for the other checks: the report's other
devices are still applied in its one transaction, and a name the host
stored before (a squat made before this check) leaves the database with
that report, unless an ARQ holds it.
"""

import json

import jsonschema
from oslo_log import log as logging

from cyborg.accelerator.common import mdev
from cyborg.accelerator.common import pci
from cyborg.accelerator.common import records
from cyborg.common import exception

LOG = logging.getLogger(__name__)

#: Longest attach_info or cpid_info accepted, in characters.
MAX_INFO = 1024

_ADDRESS = {
    'domain': {'type': 'string', 'pattern': '^[0-9a-f]{4}$'},
    'bus': {'type': 'string', 'pattern': '^[0-9a-f]{2}$'},
    'device': {'type': 'string', 'pattern': '^[0-9a-f]{2}$'},
    'function': {'type': 'string', 'pattern': '^[0-7]$'},
}
_MARK = {'type': 'string', 'pattern': r'^[A-Za-z0-9_.:-]{1,80}$'}
_PHYSNET = {'type': 'string', 'pattern': r'^[^\x00-\x1f\x7f]{1,255}$'}


def _address_schema(required=(), **extra):
    return {'type': 'object',
            'properties': dict(_ADDRESS, **extra),
            'required': sorted(_ADDRESS) + list(required),
            'additionalProperties': False}


#: attach_info by attach_type.
ATTACH_INFO = {
    'PCI': _address_schema(physical_network=_PHYSNET),
    # The fake driver's: free-form, never sent to an agent.
    'TEST_PCI': {'type': 'object', 'maxProperties': 16,
                 'propertyNames': {'pattern': '^[a-z_]{1,32}$'},
                 'additionalProperties': {
                     'anyOf': [{'type': 'string', 'maxLength': 64},
                               {'type': 'integer'}]}},
    'MDEV': _address_schema(
        required=['asked_type'],
        asked_type={'type': 'string',
                    'pattern': mdev.MDEV_TYPE_RE.pattern},
        vgpu_mark=_MARK),
}
#: cpid_info by cpid_type.
CPID_INFO = {'PCI': _address_schema()}


def _validators(schemas):
    """{kind: Validator} of ``schemas``, each schema checked once here:
    ``jsonschema.validate`` checks the schema against its meta-schema
    and builds a Validator at every call, which cost more than half of a
    report's checks (a report checks every attach handle)."""
    validators = {}
    for kind, schema in schemas.items():
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validators[kind] = cls(schema)
    return validators


_VALIDATORS = {id(ATTACH_INFO): _validators(ATTACH_INFO),
               id(CPID_INFO): _validators(CPID_INFO)}


def _problem(schemas, kind, info):
    """Why ``info`` (JSON text of type ``kind``) does not match its
    schema in ``schemas`` (ATTACH_INFO or CPID_INFO); None when it
    does."""
    validator = _VALIDATORS[id(schemas)].get(kind)
    if validator is None:
        return 'unknown type %r' % (kind,)
    if not isinstance(info, str) or len(info) > MAX_INFO:
        return 'not JSON text of at most %d characters' % MAX_INFO
    try:
        doc = json.loads(info)
    except ValueError:
        return 'not JSON'
    # The error jsonschema.validate would raise: the best match.
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    return None if error is None else error.message


def _items(obj, name):
    return getattr(obj, name) if obj.obj_attr_is_set(name) else []


def _checked_handles(hostname, deployable):
    kept = []
    for handle in _items(deployable, 'attach_handle_list'):
        problem = _problem(ATTACH_INFO, handle.attach_type,
                           handle.attach_info)
        if problem is None:
            kept.append(handle)
        else:
            LOG.warning('Host %s reported attach handle %.200r (%.20r) of '
                        'deployable %.100r that is not valid (%s); it is '
                        'dropped', hostname, handle.attach_info,
                        handle.attach_type, deployable.name, problem)
    return kept


def own_prefixes(hostname):
    """What the names of ``hostname``'s deployables start with: our
    agents' ``<host>_`` (sanitized), and upstream's ``<short name>_`` (a
    host adopted from upstream keeps the names upstream's agent gave)."""
    short = hostname.split('.')[0]
    return tuple(sorted({records.deployable_name(hostname, ''),
                         records.deployable_name(short, ''), short + '_'}))


def _own_deployables(hostname, device):
    """The deployables of ``device`` named after ``hostname``."""
    prefixes = own_prefixes(hostname)
    kept = []
    for deployable in _items(device, 'deployable_list'):
        name = deployable.name
        if isinstance(name, str) and name.startswith(prefixes):
            kept.append(deployable)
        else:
            LOG.warning('Host %s reported deployable %.100r, whose name '
                        'does not start with %s; it is dropped', hostname,
                        name, ' or '.join(map(repr, prefixes)))
    return kept


def checked(hostname, devices):
    """``devices`` (a report of ``hostname``) without what fails its
    schema: bad attach handles are dropped, and so are deployables not
    named after the host and devices with a bad control path id (with
    their deployables)."""
    result = []
    for device in devices or []:
        cpid = device.controlpath_id
        problem = _problem(CPID_INFO, cpid.cpid_type, cpid.cpid_info)
        if problem is not None:
            LOG.warning('Host %s reported a device with control path id '
                        '%.200r (%.20r) that is not valid (%s); it is '
                        'dropped', hostname, cpid.cpid_info,
                        cpid.cpid_type, problem)
            continue
        if device.obj_attr_is_set('deployable_list'):
            device.deployable_list = _own_deployables(hostname, device)
        for deployable in _items(device, 'deployable_list'):
            deployable.attach_handle_list = _checked_handles(hostname,
                                                             deployable)
        result.append(device)
    return result


def mdev_target(info):
    """``(PCI address, mdev type)`` as text, from the ``attach_info`` (a
    dict) of an MDEV attach handle; Invalid if it is not one."""
    if not isinstance(info, dict) or _problem(
            ATTACH_INFO, 'MDEV', json.dumps(info)) is not None:
        raise exception.Invalid(reason='%.200r is not the attach info of '
                                'an mdev' % (info,))
    address = pci.PciAddress(*(int(info[key], 16) for key in (
        'domain', 'bus', 'device', 'function')))
    return str(address), info['asked_type']
