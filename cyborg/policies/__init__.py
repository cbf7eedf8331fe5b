"""Policy defaults: the personas of ``base`` and every API rule, one row
of ``TABLE`` each.

Code names a rule by its constant here (``policies.DEVICE_GET_ONE``),
never by a string, so a misspelt name fails at import rather than at
request time; tests check that every constant has a row, that every row
is checked by the API, and that no policy check is given a literal. A
new API action adds a constant and a row. The table also writes the
route-to-rule page of the documentation (``routes()``). ``list_rules``
is the ``oslo.policy.policies`` entry point (namespace ``cyborg.api``).
"""

import typing

from oslo_policy import policy

from cyborg.policies import base

# Rule names: upstream's, which operators' policy files use.
ACCELERATOR_GET_ALL = 'cyborg:accelerator:get_all'
ACCELERATOR_GET_ONE = 'cyborg:accelerator:get_one'
ACCELERATOR_CREATE = 'cyborg:accelerator:create'
ACCELERATOR_UPDATE = 'cyborg:accelerator:update'
ACCELERATOR_ATTACH = 'cyborg:accelerator:attach'
ACCELERATOR_DETACH = 'cyborg:accelerator:detach'
ARQ_GET_ALL = 'cyborg:arq:get_all'
ARQ_GET_ONE = 'cyborg:arq:get_one'
ARQ_CREATE = 'cyborg:arq:create'
ARQ_UPDATE = 'cyborg:arq:update'
ARQ_DELETE = 'cyborg:arq:delete'
ATTACHMENT_CREATE = 'cyborg:attachment:create'
ATTACHMENT_DELETE = 'cyborg:attachment:delete'
ATTRIBUTE_GET_ALL = 'cyborg:attribute:get_all'
ATTRIBUTE_GET_ONE = 'cyborg:attribute:get_one'
ATTRIBUTE_CREATE = 'cyborg:attribute:create'
ATTRIBUTE_DELETE = 'cyborg:attribute:delete'
DEPLOYABLE_GET_ALL = 'cyborg:deployable:get_all'
DEPLOYABLE_GET_ONE = 'cyborg:deployable:get_one'
DEPLOYABLE_PROGRAM = 'cyborg:deployable:program'
DEVICE_GET_ALL = 'cyborg:device:get_all'
DEVICE_GET_ONE = 'cyborg:device:get_one'
DEVICE_DISABLE = 'cyborg:device:disable'
DEVICE_ENABLE = 'cyborg:device:enable'
DEVICE_PROFILE_GET_ALL = 'cyborg:device_profile:get_all'
DEVICE_PROFILE_GET_ONE = 'cyborg:device_profile:get_one'
DEVICE_PROFILE_CREATE = 'cyborg:device_profile:create'
DEVICE_PROFILE_DELETE = 'cyborg:device_profile:delete'
DISCOVERY_CREATE = 'cyborg:discovery:create'
DRIVER_GET_ALL = 'cyborg:driver:get_all'
DRIVER_INSTALL = 'cyborg:driver:install'
DRIVER_UPDATE = 'cyborg:driver:update'
DRIVER_UNINSTALL = 'cyborg:driver:uninstall'
HARDWARE_GET_ALL = 'cyborg:hardware:get_all'
HOST_GET_ALL = 'cyborg:host:get_all'
HOST_GET_ONE = 'cyborg:host:get_one'
SERVICE_GET_ALL = 'cyborg:service:get_all'

# Defaults, in terms of base's personas.
ADMINS = 'rule:admin_api'
READERS = 'rule:project_reader_or_admin'
MANAGERS = 'rule:project_manager_or_admin'
MEMBERS_OR_SERVICE = 'rule:project_member_or_service'
PROJECT = ('project',)


class Deprecated(typing.NamedTuple):
    """The check a rule passed before its default, which passes too
    while ``[oslo_policy] enforce_new_defaults`` is False, and why it
    changed."""
    check_str: str
    reason: str


def _admins_before(resources):
    """Reads of the hardware views, which only administrators could do
    before managers were given them."""
    return Deprecated(ADMINS, 'Project managers may read %s too.'
                      % resources)


class Rule(typing.NamedTuple):
    """One API rule: its name, default check, scope types, description,
    the operations (``'METHOD /path'``) it guards, and the check it
    replaced, if any."""
    name: str
    check_str: str
    scope_types: tuple
    description: str
    operations: tuple
    deprecated: Deprecated | None = None

    def default(self):
        """The rule as oslo.policy registers and documents it."""
        deprecated = None
        if self.deprecated:
            deprecated = policy.DeprecatedRule(
                name=self.name, check_str=self.deprecated.check_str,
                deprecated_reason=self.deprecated.reason,
                deprecated_since=base.DEPRECATED_SINCE)
        return policy.DocumentedRuleDefault(
            name=self.name, check_str=self.check_str,
            description=self.description,
            operations=[{'method': method, 'path': path}
                        for method, path in self.methods_and_paths()],
            scope_types=list(self.scope_types), deprecated_rule=deprecated)

    def methods_and_paths(self):
        return [tuple(op.split(' ', 1)) for op in self.operations]


_ARQS = '/v2/accelerator_requests'
_DEVICES_READ = _admins_before('devices')
_DEPLOYABLES_READ = _admins_before('deployables')
_ATTRIBUTES_READ = _admins_before('attributes')
_V1 = '/v1/accelerators/{accelerator_uuid}'

# Device profiles: project readers (and administrators) read them, which
# Nova needs for every user's boot; only administrators change them.
# ARQs: project readers read their project's, project members and
# services (Nova) create, bind and delete them; ownership is the database
# query's (another project's ARQ is a 404), and binding, unbinding and
# deleting bound ARQs also need a service token, in code. Hardware views
# (deployables, devices, attributes, v1 accelerators): managers and
# administrators read, administrators change. The generic-driver
# operations (2.5, 2.6) manage hosts and agents: administrators only.
TABLE = (
    Rule(DEVICE_PROFILE_GET_ALL, READERS, PROJECT, 'List device profiles.',
         ('GET /v2/device_profiles',)),
    Rule(DEVICE_PROFILE_GET_ONE, READERS, PROJECT, 'Show a device profile.',
         ('GET /v2/device_profiles/{device_profile_uuid_or_name}',)),
    Rule(DEVICE_PROFILE_CREATE, ADMINS, PROJECT, 'Create a device profile.',
         ('POST /v2/device_profiles',)),
    Rule(DEVICE_PROFILE_DELETE, ADMINS, PROJECT, 'Delete device profiles.',
         ('DELETE /v2/device_profiles/{device_profile_uuid}',
          'DELETE /v2/device_profiles?value={names}')),
    Rule(ARQ_GET_ALL, READERS, PROJECT, 'List accelerator requests.',
         ('GET ' + _ARQS,)),
    Rule(ARQ_GET_ONE, READERS, PROJECT, 'Show an accelerator request.',
         ('GET ' + _ARQS + '/{accelerator_request_uuid}',)),
    Rule(ARQ_CREATE, MEMBERS_OR_SERVICE, PROJECT,
         'Create the accelerator requests of a device profile.',
         ('POST ' + _ARQS,)),
    Rule(ARQ_UPDATE, MEMBERS_OR_SERVICE, PROJECT,
         'Bind or unbind accelerator requests.', ('PATCH ' + _ARQS,)),
    Rule(ARQ_DELETE, MEMBERS_OR_SERVICE, PROJECT,
         'Delete accelerator requests.',
         ('DELETE ' + _ARQS + '?arqs={uuids}',
          'DELETE ' + _ARQS + '?instance={instance_uuid}')),
    Rule(DEPLOYABLE_GET_ALL, MANAGERS, PROJECT, 'List deployables.',
         ('GET /v2/deployables',), _DEPLOYABLES_READ),
    Rule(DEPLOYABLE_GET_ONE, MANAGERS, PROJECT, 'Show a deployable.',
         ('GET /v2/deployables/{deployable_uuid}',), _DEPLOYABLES_READ),
    Rule(DEPLOYABLE_PROGRAM, ADMINS, PROJECT,
         'Program a deployable (an FPGA) with a bitstream image.',
         ('PATCH /v2/deployables/{deployable_uuid}/program',)),
    Rule(DEVICE_GET_ALL, MANAGERS, PROJECT, 'List devices.',
         ('GET /v2/devices',), _DEVICES_READ),
    Rule(DEVICE_GET_ONE, MANAGERS, PROJECT, 'Show a device.',
         ('GET /v2/devices/{device_uuid}',), _DEVICES_READ),
    Rule(DEVICE_DISABLE, ADMINS, PROJECT,
         'Disable a device: nothing more is scheduled on it.',
         ('POST /v2/devices/{device_uuid}/disable',)),
    Rule(DEVICE_ENABLE, ADMINS, PROJECT, 'Enable a device again.',
         ('POST /v2/devices/{device_uuid}/enable',)),
    Rule(ATTRIBUTE_GET_ALL, MANAGERS, PROJECT,
         'List attributes of deployables.', ('GET /v2/attributes',),
         _ATTRIBUTES_READ),
    Rule(ATTRIBUTE_GET_ONE, MANAGERS, PROJECT, 'Show an attribute.',
         ('GET /v2/attributes/{attribute_uuid}',), _ATTRIBUTES_READ),
    Rule(ATTRIBUTE_CREATE, ADMINS, PROJECT,
         'Add an attribute to a deployable.', ('POST /v2/attributes',)),
    Rule(ATTRIBUTE_DELETE, ADMINS, PROJECT, 'Delete an attribute.',
         ('DELETE /v2/attributes/{attribute_uuid}',)),
    Rule(ACCELERATOR_GET_ALL, MANAGERS, PROJECT, 'List v1 accelerators.',
         ('GET /v1/accelerators',)),
    Rule(ACCELERATOR_GET_ONE, MANAGERS, PROJECT, 'Show a v1 accelerator.',
         ('GET ' + _V1,)),
    Rule(ACCELERATOR_CREATE, ADMINS, PROJECT,
         'Provision a free deployable as a named v1 accelerator.',
         ('POST /v1/accelerators',)),
    Rule(ACCELERATOR_UPDATE, ADMINS, PROJECT,
         "Replace a v1 accelerator's spec.",
         ('PUT ' + _V1 + '/acc_specs',)),
    Rule(ACCELERATOR_ATTACH, ADMINS, PROJECT,
         'Attach a v1 accelerator to an instance or a host.',
         ('PUT ' + _V1,)),
    Rule(ACCELERATOR_DETACH, ADMINS, PROJECT, 'Detach a v1 accelerator.',
         ('DELETE ' + _V1,)),
    Rule(HOST_GET_ALL, ADMINS, PROJECT,
         'List hosts with their agents and drivers.', ('GET /v2/hosts',)),
    Rule(HOST_GET_ONE, ADMINS, PROJECT, 'Show a host.',
         ('GET /v2/hosts/{hostname}',)),
    Rule(DRIVER_GET_ALL, ADMINS, PROJECT, 'List the drivers of every host.',
         ('GET /v2/drivers',)),
    Rule(DRIVER_INSTALL, ADMINS, PROJECT,
         'Install (load and enable) a driver on one host or every host.',
         ('POST /v2/drivers',)),
    Rule(DRIVER_UPDATE, ADMINS, PROJECT,
         'Reload a driver with its current settings.',
         ('PATCH /v2/drivers/{name}',)),
    Rule(DRIVER_UNINSTALL, ADMINS, PROJECT, 'Uninstall a driver.',
         ('DELETE /v2/drivers/{name}',)),
    Rule(SERVICE_GET_ALL, ADMINS, PROJECT,
         'List the acceleration services of every deployable.',
         ('GET /v2/services',)),
    Rule(DISCOVERY_CREATE, ADMINS, PROJECT,
         'Run discovery now on one host or every host.',
         ('POST /v2/discovery',)),
    Rule(ATTACHMENT_CREATE, ADMINS, PROJECT,
         "Attach a device profile's accelerators to an instance.",
         ('POST /v2/attachments',)),
    Rule(HARDWARE_GET_ALL, ADMINS, PROJECT,
         'List the PCI functions the drivers of each host looked at, '
         'offered or not and why (2.6).', ('GET /v2/hardware',)),
    Rule(ATTACHMENT_DELETE, ADMINS, PROJECT,
         'Detach the accelerators of an instance.',
         ('DELETE /v2/attachments/{instance_uuid}',)),
)


def list_rules():
    """Every rule default of the API, base rules first."""
    return base.RULES + [rule.default() for rule in TABLE]


class Route(typing.NamedTuple):
    path: str
    method: str
    rule: str
    check_str: str
    scope_types: tuple
    #: The replaced check that passes too while new defaults are not
    #: enforced, or ''.
    deprecated_check_str: str


def routes():
    """Every operation of the table with the rule that guards it, by path
    and method: what an operator looks up to write a policy file."""
    return sorted(Route(path, method, rule.name, rule.check_str,
                        rule.scope_types,
                        rule.deprecated.check_str if rule.deprecated else '')
                  for rule in TABLE
                  for method, path in rule.methods_and_paths())
