"""Client side of the conductor RPC API.

Version history:

* 1.0 - Initial version: ``agent_hello`` (call) and ``agent_heartbeat``
  (cast).
* 1.1 - ``report_data`` (call): an agent's devices with their content
  hash; returns the hash once the database and Placement show them.
* 1.2 - The API's writes, all calls: ``device_profile_create``,
  ``device_profile_delete``, ``arq_create``, ``arq_apply_patch``,
  ``arq_delete``, ``deployable_program``, ``device_set_status``,
  ``attribute_create``, ``attribute_delete``.
* 1.3 - The v1 API's writes, all calls: ``accelerator_create``,
  ``accelerator_update_spec``, ``accelerator_attach``,
  ``accelerator_detach``.
* 1.4 - Generic-driver operations (API 2.5), all calls: ``driver_install``,
  ``driver_uninstall``, ``driver_update``, ``discover_hosts``,
  ``attachment_create``, ``attachment_delete``.
* 1.5 - ``report_data`` takes ``report_seq``, the agent's sequence of the
  report, so that a report delivered after a newer one is refused.
* 1.6 - ``report_data`` takes ``hardware``, the HardwareFunctions the
  agent's drivers looked at, offered or not (``GET /v2/hardware``).
* 1.7 - ``arq_create`` takes ``views``: it returns the new ARQs' views
  instead of their uuids, so that the API does not read them back.
"""


import oslo_messaging as messaging

from cyborg.common import keys
from cyborg.common import rpc
from cyborg.common import signing

#: The generic-driver operations wait for agents (each at most
#: AGENT_WAIT seconds, in parallel) and for Placement: the API waits for
#: the conductor a little longer than that, so a silent agent comes back
#: as a "no answer" row, not as a timeout of the whole request.
AGENT_WAIT = 60
MARGIN = 30
OPERATION_TIMEOUT = AGENT_WAIT * 2 + MARGIN


def _as_host(hostname):
    """An agent's messages are signed with the key of the host they are
    about; only that host (and the conductors) hold it."""
    return signing.sending_as(keys.host_identity(hostname))


class ConductorAPI:
    """What the API and the agents ask of the conductor. The agents'
    methods are signed as the host they name, the others as the API."""

    RPC_API_VERSION = '1.7'

    def __init__(self, topic=rpc.CONDUCTOR_TOPIC):
        self.client = rpc.get_topic_client(topic, self.RPC_API_VERSION)
        # {topic: client} of the heartbeat channels named by hellos.
        self._channels = {}

    def can_send_version(self, version):
        """Whether ``version`` is within this client's version cap (this
        release's RPC_API_VERSION, or what :meth:`cap_version` set)."""
        return self.client.can_send_version(version)

    def cap_version(self, version):
        """Send no message newer than ``version`` (None: this release's
        RPC_API_VERSION): the conductor is of an older release."""
        self.client.version_cap = version or self.RPC_API_VERSION

    def agent_hello(self, context, hello, timeout=None):
        """Register an agent and its drivers; returns the Host."""
        cctxt = self.client.prepare(version='1.0', timeout=timeout)
        # A hello for a conductor of an older release is the primitive of
        # the AgentHello version it knows.
        hostname = (hello['cyborg_object.data']['hostname']
                    if isinstance(hello, dict) else hello.hostname)
        with _as_host(hostname):
            return cctxt.call(context, 'agent_hello', hello=hello)

    def agent_heartbeat(self, context, hostname, topic=None):
        """Tell the conductor the agent on ``hostname`` is alive: on the
        heartbeat channel ``topic`` when the hello's answer named one
        (:mod:`cyborg.common.heartbeats`), else on the conductor's
        topic."""
        if topic is None:
            cctxt = self.client.prepare(version='1.0')
        else:
            cctxt = self._channel(topic)
        with _as_host(hostname):
            cctxt.cast(context, 'agent_heartbeat', hostname=hostname)

    def _channel(self, topic):
        client = self._channels.get(topic)
        if client is None:
            client = self._channels[topic] = rpc.get_client(
                messaging.Target(topic=topic, version='1.0'),
                version_cap='1.0', serializer=rpc.RequestIdSerializer())
        return client

    def report_data(self, context, hostname, devices, report_hash,
                    report_seq=None, hardware=None, timeout=None):
        """Send the DriverDevices of ``hostname``; returns ``report_hash``
        when accepted, None when the conductor wants it again later.
        ``report_seq`` (1.5) grows with each report the agent sends;
        ``hardware`` (1.6, with a ``report_seq``) lists the functions the
        drivers looked at, and ``report_hash`` covers it."""
        kwargs = dict(hostname=hostname, devices=devices,
                      report_hash=report_hash)
        if report_seq is None:
            cctxt = self.client.prepare(version='1.1', timeout=timeout)
        elif hardware is None:
            kwargs['report_seq'] = report_seq
            cctxt = self.client.prepare(version='1.5', timeout=timeout)
        else:
            kwargs.update(report_seq=report_seq, hardware=hardware)
            cctxt = self.client.prepare(version='1.6', timeout=timeout)
        with _as_host(hostname):
            return cctxt.call(context, 'report_data', **kwargs)

    def device_profile_create(self, context, values):
        """Create a device profile from validated ``values`` (name,
        groups, optional description and uuid); returns its uuid."""
        cctxt = self.client.prepare(version='1.2')
        return cctxt.call(context, 'device_profile_create', values=values)

    def device_profile_delete(self, context, uuids):
        """Delete the device profiles ``uuids``, all or none."""
        cctxt = self.client.prepare(version='1.2')
        return cctxt.call(context, 'device_profile_delete', uuids=uuids)

    def arq_create(self, context, device_profile_name, project_id):
        """Create the ARQs of a device profile; returns their views as
        ``db.accelerator_requests.to_primitive`` gives them."""
        cctxt = self.client.prepare(version='1.7')
        return cctxt.call(context, 'arq_create',
                          device_profile_name=device_profile_name,
                          project_id=project_id, views=True)

    def arq_apply_patch(self, context, patch, project_id):
        """Bind or unbind ARQs: ``patch`` maps an ARQ uuid to the fields
        to set (bind) or to None (unbind). ``project_id`` limits which
        ARQs may be touched (None: any project)."""
        cctxt = self.client.prepare(version='1.2')
        return cctxt.call(context, 'arq_apply_patch', patch=patch,
                          project_id=project_id)

    def arq_delete(self, context, arq_uuids=None, instance_uuid=None,
                   project_id=None):
        """Unbind and delete ARQs by uuid or by instance."""
        cctxt = self.client.prepare(version='1.2')
        return cctxt.call(context, 'arq_delete', arq_uuids=arq_uuids,
                          instance_uuid=instance_uuid, project_id=project_id)

    def deployable_program(self, context, deployable_uuid, image_uuid):
        """Program a deployable (an FPGA) with a bitstream image."""
        cctxt = self.client.prepare(version='1.2')
        return cctxt.call(context, 'deployable_program',
                          deployable_uuid=deployable_uuid,
                          image_uuid=image_uuid)

    def device_set_status(self, context, device_uuid, status):
        """Enable (``enabled``) or disable (``maintaining``) a device."""
        cctxt = self.client.prepare(version='1.2')
        return cctxt.call(context, 'device_set_status',
                          device_uuid=device_uuid, status=status)

    def attribute_create(self, context, deployable_id, key, value):
        """Add an attribute to a deployable; returns its uuid."""
        cctxt = self.client.prepare(version='1.2')
        return cctxt.call(context, 'attribute_create',
                          deployable_id=deployable_id, key=key, value=value)

    def attribute_delete(self, context, uuid):
        """Delete the attribute ``uuid``."""
        cctxt = self.client.prepare(version='1.2')
        return cctxt.call(context, 'attribute_delete', uuid=uuid)

    def accelerator_create(self, context, name, uuid=None):
        """Provision a free deployable as accelerator ``name``; returns
        its uuid."""
        cctxt = self.client.prepare(version='1.3')
        return cctxt.call(context, 'accelerator_create', name=name,
                          uuid=uuid)

    def accelerator_update_spec(self, context, uuid, expected_version,
                                remotable, acc_capability):
        """Replace an accelerator's spec if it is still at
        ``expected_version``; returns the new version."""
        cctxt = self.client.prepare(version='1.3')
        return cctxt.call(context, 'accelerator_update_spec', uuid=uuid,
                          expected_version=expected_version,
                          remotable=remotable, acc_capability=acc_capability)

    def accelerator_attach(self, context, uuid, instance_uuid=None,
                           host=None):
        """Attach accelerator ``uuid`` to an instance or a host."""
        cctxt = self.client.prepare(version='1.3')
        return cctxt.call(context, 'accelerator_attach', uuid=uuid,
                          instance_uuid=instance_uuid, host=host)

    def accelerator_detach(self, context, uuid):
        """Detach accelerator ``uuid``."""
        cctxt = self.client.prepare(version='1.3')
        return cctxt.call(context, 'accelerator_detach', uuid=uuid)

    def driver_install(self, context, name, hostname=None):
        """Install driver ``name`` on ``hostname`` or every host that is
        up; returns one status dict per host."""
        return self.client.prepare(
            version='1.4', timeout=OPERATION_TIMEOUT).call(
            context, 'driver_install', name=name, hostname=hostname)

    def driver_uninstall(self, context, name, hostname=None):
        """Uninstall driver ``name``; DriverInUse while it is used."""
        return self.client.prepare(
            version='1.4', timeout=OPERATION_TIMEOUT).call(
            context, 'driver_uninstall', name=name, hostname=hostname)

    def driver_update(self, context, name, hostname=None):
        """Reload driver ``name``; returns one status dict per host."""
        return self.client.prepare(
            version='1.4', timeout=OPERATION_TIMEOUT).call(
            context, 'driver_update', name=name, hostname=hostname)

    def discover_hosts(self, context, hostname=None, timeout=None):
        """Discovery now; returns one summary dict per host."""
        cctxt = self.client.prepare(
            version='1.4', timeout=(timeout or AGENT_WAIT) + MARGIN)
        return cctxt.call(
            context, 'discover_hosts', hostname=hostname, timeout=timeout)

    def attachment_create(self, context, instance_uuid, profile_name,
                          hostname=None):
        """Attach a profile's accelerators to an instance; returns the
        uuids of the bound ARQs."""
        return self.client.prepare(
            version='1.4', timeout=OPERATION_TIMEOUT).call(
            context, 'attachment_create', instance_uuid=instance_uuid,
            profile_name=profile_name, hostname=hostname)

    def attachment_delete(self, context, instance_uuid):
        """Detach every accelerator of an instance."""
        return self.client.prepare(
            version='1.4', timeout=OPERATION_TIMEOUT).call(
            context, 'attachment_delete', instance_uuid=instance_uuid)


class _LocalClient:
    """Stands in for the RPC client of a conductor in this very process
    (the all-in-one): a call runs the endpoint at once, in the caller's
    thread, instead of crossing the in-process message bus, which polls
    every 50 ms. Endpoints and exceptions are the ones RPC would reach."""

    def __init__(self, manager):
        self.manager = manager

    def prepare(self, **_kwargs):
        return self

    def call(self, context, method, **kwargs):
        try:
            return getattr(self.manager, method)(context, **kwargs)
        except messaging.ExpectedException as e:
            raise e.exc_info[1] from None

    cast = call


class LocalConductorAPI(ConductorAPI):
    """The ConductorAPI of a ConductorManager in this process."""

    def __init__(self, manager):
        self.client = _LocalClient(manager)
