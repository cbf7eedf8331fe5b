"""The cyborg exception hierarchy.

Every exception carries a message template (``msg_fmt``) and the HTTP status
it maps to (``code``). Generic parents carry the status; the API maps
``code`` once. This module is allowed across RPC, so a conductor exception
arrives at the API as the same class.
"""

from http import client as http

from oslo_log import log as logging

from cyborg.i18n import _

LOG = logging.getLogger(__name__)


class CyborgException(Exception):
    """Base class. Subclasses set ``msg_fmt`` and, if not 500, ``code``."""

    msg_fmt = _('An unknown exception occurred.')
    code = http.INTERNAL_SERVER_ERROR
    headers = {}
    safe = False

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        self.kwargs.setdefault('code', self.code)
        if not message:
            message = self._format(kwargs)
        super().__init__(message)

    def _format(self, kwargs):
        try:
            return self.msg_fmt % kwargs
        except (KeyError, TypeError):
            from cyborg.conf import CONF
            LOG.exception('Exception in string format operation, '
                          'kwargs: %s', kwargs)
            if CONF.fatal_exception_format_errors:
                raise
            return self.msg_fmt

    def __str__(self):
        return self.args[0] if self.args else ''

    def public_message(self):
        """What a client is told: the message, unless the class says
        less (a path on the server, say, stays in its log)."""
        return str(self)


class Invalid(CyborgException):
    msg_fmt = _('Unacceptable parameters: %(reason)s')
    code = http.BAD_REQUEST


class InvalidParameterValue(Invalid):
    msg_fmt = _('%(err)s')


class InvalidRequestBody(Invalid):
    msg_fmt = _('Invalid request body: %(reason)s')


class InvalidQueryParameter(Invalid):
    msg_fmt = _('Invalid query parameter %(name)s: %(reason)s')


class InvalidUUID(Invalid):
    msg_fmt = _('Expected a UUID but received %(uuid)s.')


class RefusedDeviceArgument(Invalid):
    """An agent or its privileged daemon refuses what it was asked to do
    to a device: an argument is not what it must be."""

    msg_fmt = _('%(operation)s refused: %(reason)s')


class MarkerNotFound(Invalid):
    msg_fmt = _('No item with marker %(marker)s was found.')


class NotAcceptable(CyborgException):
    msg_fmt = _('The request does not accept what this API answers.')
    code = http.NOT_ACCEPTABLE


class InvalidAPIVersion(NotAcceptable):
    msg_fmt = _('%(reason)s')


class JSONNotAccepted(NotAcceptable):
    msg_fmt = _('This API answers in JSON only, which "Accept: '
                '%(accept)s" refuses.')


class NotAuthorized(CyborgException):
    msg_fmt = _('Not authorized.')
    code = http.UNAUTHORIZED


class Forbidden(CyborgException):
    msg_fmt = _('Forbidden.')
    code = http.FORBIDDEN


class PolicyNotAuthorized(Forbidden):
    msg_fmt = _('Policy does not allow %(action)s to be performed.')


class NotFound(CyborgException):
    msg_fmt = _('Resource could not be found.')
    code = http.NOT_FOUND


class ResourceNeedsMicroversion(NotFound):
    msg_fmt = _('The resource /v2/%(resource)s is served from microversion '
                '%(version)s; this request asked for %(requested)s. Ask for '
                'it with the header "OpenStack-API-Version: accelerator '
                '%(version)s" (or later).')


class HostNotFound(NotFound):
    msg_fmt = _('Host %(host)s could not be found.')


class DriverNotFound(NotFound):
    msg_fmt = _('Accelerator driver %(name)s could not be found.')


class DriverNotInstalled(NotFound):
    msg_fmt = _('Accelerator driver %(driver)s is not installed on host '
                '%(host)s.')


class Conflict(CyborgException):
    msg_fmt = _('Conflict.')
    code = http.CONFLICT


class AgentConflict(Conflict):
    msg_fmt = _('Host %(host)s is held by agent %(holder)s, which was heard '
                '%(seconds)d s ago; agent %(agent)s is refused. Stop one of '
                'them, or give this one its own [DEFAULT] host.')


class DuplicateName(Conflict):
    msg_fmt = _('A %(resource)s named %(name)s already exists.')


class Locked(CyborgException):
    msg_fmt = _('%(reason)s')
    code = http.LOCKED


class ServiceUnavailable(CyborgException):
    msg_fmt = _('%(reason)s')
    code = http.SERVICE_UNAVAILABLE


class Stopping(ServiceUnavailable):
    """This process was told to stop: a wait for something else (the
    broker, an exchange) was cut short (see
    :mod:`cyborg.common.stopping`)."""

    msg_fmt = _('The service is stopping.')


class DatabaseUnavailable(ServiceUnavailable):
    """The database does not answer (down, unreachable, restarting).

    Raised by ``cyborg.db.api`` for any connection failure, in the API
    and in the conductor (whence it crosses RPC as this class). Clients
    and load balancers are told when to try again."""

    msg_fmt = _('The database is unavailable; try again later.')
    headers = {'Retry-After': '5'}


class DriverLoadError(CyborgException):
    msg_fmt = _('Accelerator driver %(name)s could not be loaded: '
                '%(reason)s')


class DatabaseNotReady(CyborgException):
    """A daemon's database cannot serve it: unreachable, refusing the
    login, missing, or without the schema this release needs. Said in
    one line that names the database (its password masked) and what to
    do."""

    msg_fmt = _('the database %(url)s %(problem)s; %(fix)s')


class PlacementError(CyborgException):
    msg_fmt = _('Placement request %(method)s %(url)s failed with '
                '%(status)s: %(detail)s')


# Resource errors below: one block per resource, each owned by its
# resource's code. Keep the blocks apart to keep merges trivial.

# -- device profiles --

class InvalidDeviceProfileGroup(Invalid):
    msg_fmt = _('Invalid device profile group key %(key)r: %(reason)s.')


class DeviceProfileNotFound(NotFound):
    msg_fmt = _('Device profile %(profile)s could not be found.')


class DuplicateDeviceProfile(Conflict):
    msg_fmt = _('Device profile %(name)s (uuid %(uuid)s) already exists.')


class DeviceProfileInUse(Conflict):
    msg_fmt = _('Device profile %(profile)s is used by accelerator '
                'requests and cannot be deleted.')


# -- accelerator requests --

class ARQNotFound(NotFound):
    msg_fmt = _('Accelerator request %(arq)s could not be found.')


class InstanceHasARQs(Invalid):
    msg_fmt = _('Instance %(instance)s already has accelerator requests.')


class BindHostMismatch(Invalid):
    msg_fmt = _('Accelerator request %(arq)s cannot be bound on host '
                '%(hostname)s: resource provider %(rp_uuid)s is a device '
                'of host %(host)s, whose names are %(names)s%(reason)s.')


class ARQBadState(Conflict):
    msg_fmt = _('Accelerator request %(arq)s is %(state)s; it must be one '
                'of %(expected)s for this.')


class NoFreeAttachHandle(Conflict):
    msg_fmt = _('The deployable behind resource provider %(rp_uuid)s has '
                'no free accelerator.')


class ProjectPatchForbidden(Forbidden):
    msg_fmt = _('Only administrators may set the project of an ARQ.')


class ServiceTokenRequired(Forbidden):
    msg_fmt = _('%(action)s needs a service token (Nova sends one with '
                '[service_user] send_service_user_token).')


class BoundARQDeleteForbidden(ServiceTokenRequired):
    msg_fmt = _('Accelerator request %(arq)s is %(state)s for instance '
                '%(instance)s; deleting it needs a service token (Nova '
                'sends one with [service_user] send_service_user_token). '
                'Delete the instance, or have Nova unbind it first.')


class UnknownDeviceProvider(Invalid):
    msg_fmt = _('Resource provider %(rp_uuid)s (device_rp_uuid of '
                'accelerator request %(arq)s) is not the provider of any '
                'deployable cyborg knows.')


# -- deployables, devices, attributes --

class DeployableNotFound(NotFound):
    msg_fmt = _('Deployable %(deployable)s could not be found.')


class DeviceNotFound(NotFound):
    msg_fmt = _('Device %(device)s could not be found.')


class AttributeNotFound(NotFound):
    msg_fmt = _('Attribute %(attribute)s could not be found.')


class AttributeExists(Conflict):
    msg_fmt = _('Deployable %(deployable)s already has an attribute '
                '%(key)s.')


class DeployableNotProgrammable(Invalid):
    msg_fmt = _('Deployable %(deployable)s cannot be programmed: '
                '%(reason)s')


class ImageNotFound(Invalid):
    msg_fmt = _('Image %(image)s was not found in Glance.')


class ImageNotUnique(Invalid):
    msg_fmt = _('Expected exactly one active image of a trusted owner in '
                'Glance with accel:function_id %(function_id)s, found '
                '%(count)d (%(images)s).')


class ImageNotTrusted(Invalid):
    msg_fmt = _('Image %(image)s cannot be programmed: %(reason)s.')


class GlanceUnavailable(ServiceUnavailable):
    msg_fmt = _('Glance cannot be used: %(reason)s')


class NovaUnavailable(ServiceUnavailable):
    """Nova could not say which servers exist: nothing may be concluded
    from its silence."""

    msg_fmt = _('Nova cannot be asked about servers: %(reason)s')


class FPGAProgramError(CyborgException):
    """The agent or its driver failed to program: the request was fine
    but the host could not carry it out (502)."""

    msg_fmt = _('Programming deployable %(deployable)s on host %(host)s '
                'failed: %(reason)s')
    code = http.BAD_GATEWAY


# -- accelerators (v1) --

class AcceleratorNotFound(NotFound):
    msg_fmt = _('Accelerator %(accelerator)s could not be found.')


class DuplicateAccelerator(Conflict):
    msg_fmt = _('An accelerator %(accelerator)s already exists.')


class NoFreeAccelerator(Conflict):
    msg_fmt = _('The hardware is exhausted: no accelerator unit is free to '
                'provision accelerator %(accelerator)s. All %(total)s units '
                'of enabled devices on hosts that are up are provisioned or '
                'in use; %(inactive)s more are on devices not ready yet '
                '(inactive: enable them to offer them).')


class NotProvisioned(Conflict):
    msg_fmt = _('%(accelerator)s is hardware an agent discovered (state '
                '%(state)s), not a provisioned accelerator: provision one '
                'of its units with POST /v1/accelerators {"name": ...} and '
                'use the accelerator that answers.')


class AcceleratorClaimRace(Conflict):
    msg_fmt = _('Accelerator %(accelerator)s was not provisioned: other '
                'requests kept taking the free units first; try again.')


class SpecConflict(Conflict):
    msg_fmt = _('The spec of accelerator %(accelerator)s is no longer at '
                'version %(version)s: someone changed it first. Read it '
                'again and retry.')


class AcceleratorBusy(Conflict):
    msg_fmt = _('Accelerator %(accelerator)s cannot be attached: '
                '%(reason)s.')


class AcceleratorNotAttached(Conflict):
    msg_fmt = _('Accelerator %(accelerator)s is not attached.')


class AcceleratorAllocated(Conflict):
    msg_fmt = _('Accelerator %(accelerator)s cannot be detached while '
                'allocations use it: %(holders)s.')


class DeviceSetupFailed(CyborgException):
    """The agent could not set a device up before enabling it (502)."""

    msg_fmt = _('Setting up device %(device)s on host %(host)s failed: '
                '%(reason)s')
    code = http.BAD_GATEWAY


class ProvisioningFailed(CyborgException):
    """The agent could not set the claimed device up (502)."""

    msg_fmt = _('Provisioning accelerator %(accelerator)s on host '
                '%(host)s failed: %(reason)s')
    code = http.BAD_GATEWAY


# -- generic-driver operations (2.5) --

class DriverInUse(Conflict):
    msg_fmt = _('Driver %(driver)s cannot be uninstalled from host '
                '%(host)s while its devices are in use: %(users)s.')


class UnknownDriver(Invalid):
    msg_fmt = _('There is no accelerator driver named %(driver)s; the '
                'installed ones are: %(known)s.')


class NoAcceleratorForInstance(Conflict):
    msg_fmt = _('Placement has no free accelerators for device profile '
                '%(profile)s%(where)s.')


class AttachmentNotFound(NotFound):
    msg_fmt = _('Instance %(instance)s has no accelerators attached.')


class AttachFailed(Conflict):
    msg_fmt = _('Attaching accelerators of device profile %(profile)s to '
                'instance %(instance)s failed: %(reason)s')


# -- agent and drivers --

class DriverOperationFailed(CyborgException):
    """What the conductor asked an agent to do failed (502: the agent,
    not the request, is at fault)."""

    msg_fmt = _('%(operation)s failed on host %(host)s: %(reason)s')
    code = http.BAD_GATEWAY


# -- conductor: reports, Placement, hosts --


# -- RPC signatures --

class RPCRefused(Forbidden):
    """A receiver refused an RPC message: not signed, signed by a sender
    that may not send it, or for someone else."""

    msg_fmt = _('RPC message refused: %(reason)s')


class RPCKeyMissing(ServiceUnavailable):
    """A sender has no key to sign with (see [security] key_dir).

    The message names the key file, for the log; a client is told whose
    key is missing and how an operator makes it, never a path of the
    server."""

    msg_fmt = _('No RPC key for %(identity)s: %(reason)s')
    public_fmt = _('The request cannot be signed: the RPC key of '
                   '%(party)s is missing or unreadable on the server. An '
                   'operator makes it with "cyborg-status keys create '
                   '%(option)s" (the log of the service names the file).')

    def public_message(self):
        identity = self.kwargs.get('identity')
        if identity == 'api':
            party, option = 'the API (api)', '--api'
        elif isinstance(identity, str) and identity.startswith('host:'):
            party = 'compute host %s (%s)' % (identity[5:], identity)
            option = '--host %s' % identity[5:]
        else:
            party, option = 'a cyborg service', '--api --host <host>'
        return self.public_fmt % {'party': party, 'option': option}


class RPCKeyInsecure(RPCKeyMissing):
    """A key file its group or others may read or write: refused."""

    msg_fmt = _('The RPC key file %(path)s has mode %(mode)s, open to its '
                'group or others: it is not used until it is its owner\'s '
                'alone: chmod 600 %(path)s')

    def public_message(self):
        return _('The request cannot be signed: an RPC key file on the '
                 'server is open to its group or others, and is not used '
                 'until an operator makes it its owner\'s alone (chmod 600; '
                 'the log of the service names the file).')
