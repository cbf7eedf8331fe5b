"""The conductor's RPC endpoints. Workflows live in their own modules:

* ``liveness``: agents' hello and heartbeats, hosts up and down,
* ``leases``: which conductor runs the periodic checks shared by all,
* ``reporting`` (with ``reconciler``): agents' device reports,
* ``placement_service`` (with ``placement_sync``): the one Placement
  client, host syncs and their periodic retry,
* ``agents``: the one agent RPC client and what a failed agent call
  means to the caller,
* ``device_profiles``: creating and deleting device profiles,
* ``binding``: the ARQ lifecycle (create, bind, unbind, delete, recovery),
* ``stuck_arqs``: releasing the ARQs of instances Nova no longer has,
* ``inventory``: FPGA programming and attributes,
* ``devices``: enabling and disabling devices,
* ``accelerators``: the v1 API's accelerators,
* ``drivers``: installing, uninstalling and updating drivers, discovery,
* ``attachments``: attach-instance and detach-instance.
"""

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_utils import versionutils

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import heartbeats
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.conductor import accelerators
from cyborg.conductor import agents
from cyborg.conductor import attachments
from cyborg.conductor import binding
from cyborg.conductor import device_profiles
from cyborg.conductor import devices
from cyborg.conductor import drivers
from cyborg.conductor import gauges
from cyborg.conductor import inventory
from cyborg.conductor import leases
from cyborg.conductor import liveness
from cyborg.conductor import placement_service
from cyborg.conductor import reporting
from cyborg.conductor import stuck_arqs
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import rpc_nonces


LOG = logging.getLogger(__name__)

# Seconds a stopping conductor waits for its Nova events (a daemon stops
# within cyborg.common.service.STOP_TIMEOUT).
STOP_WAIT = 1
# Seconds between two purges of the nonces of messages too old to take.
NONCE_PURGE_INTERVAL = 60

# ServiceUnavailable: the database is down (DatabaseUnavailable); the
# caller gets it as itself, a 503 for the API, a retry for an agent.
_API_ERRORS = (exception.Invalid, exception.NotFound, exception.Conflict,
               exception.Forbidden, exception.Locked,
               exception.ServiceUnavailable)


class ConductorManager:
    """Endpoints of topic ``cyborg-conductor``; see rpcapi for versions."""

    RPC_API_VERSION = '1.7'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, host, conf):
        self.host = host
        self.conf = conf
        self.placement = placement_service.PlacementService(conf)
        self.agents = agents.Agents()
        self.devices = devices.Devices(conf, self.placement, self.agents)
        self.liveness = liveness.Liveness(
            conf, on_status_change=self.devices.host_status_changed,
            agents=self.agents)
        self.reporting = reporting.Reporting(conf, self.placement)
        self.device_profiles = device_profiles.DeviceProfiles(conf)
        self.inventory = inventory.Inventory(conf, self.placement,
                                             self.agents)
        self.binding = binding.Binding(conf, self.inventory, self.agents)
        self.stuck_arqs = stuck_arqs.StuckARQs(conf, self.binding)
        self.accelerators = accelerators.Accelerators(
            conf, self.devices, self.placement, self.agents)
        self.drivers = drivers.Drivers(conf, self.agents)
        self.attachments = attachments.Attachments(conf, self.binding,
                                                   self.placement)
        self.lease = leases.Lease(conf)
        #: The heartbeat channel's consumer (None: heartbeats by RPC only).
        self.heartbeats = None
        #: The gauges read at a scrape (None without [metrics]).
        self.gauges = None
        #: Where the RPC server notes the signed messages it took, so
        #: that each runs once among all conductors (read by
        #: cyborg.common.service; private: no RPC method). None on an
        #: in-process transport: no other process sees its messages.
        self._rpc_nonces = (None if rpc.in_process(conf) else
                            rpc_nonces.Store(
                                cyborg_context.get_admin_context()))

    def init_host(self):
        """Finish what a conductor that stopped mid-way left behind;
        read the heartbeat channel (with RabbitMQ)."""
        self.liveness.check_timing()
        self.binding.recover(cyborg_context.get_admin_context())
        self.gauges = gauges.start(self.conf)
        if rpc.initialized():
            self.heartbeats = heartbeats.start(
                self.conf, rpc.key_store(), self.liveness.heard_at)

    def del_host(self):
        """Write the heartbeats heard; give the Nova events of committed
        binds a moment to go out: those that do not are sent by the next
        start or periodic check."""
        gauges.stop(self.gauges)
        self.gauges = None
        if self.heartbeats is not None:
            self.heartbeats.stop()
            self.heartbeats.join(heartbeats.Consumer.TICK)
        for what, step in (('The heartbeats heard last could not be '
                            'written', self.liveness.flush_heartbeats),
                           ('The lease on the periodic checks could not be '
                            'given up', self.lease.release)):
            try:
                step()
            except Exception:
                LOG.warning(what, exc_info=True)
        self.binding.events.wait_idle(STOP_WAIT)

    def periodic_tasks(self):
        """Each conductor writes the heartbeats it heard; the checks
        shared by all conductors run on the one holding the lease."""
        flush = self.conf.conductor.heartbeat_flush_interval
        shared = ([(self.conf.conductor.liveness_check_interval,
                    self.liveness.check_hosts)]
                  + self.binding.periodic_tasks()
                  + self.stuck_arqs.periodic_tasks()
                  + self.placement.periodic_tasks()
                  + self.accelerators.periodic_tasks()
                  + ([(NONCE_PURGE_INTERVAL, self._purge_rpc_nonces)]
                     if self._rpc_nonces is not None else []))
        return ([(flush, self.liveness.flush_heartbeats)] if flush else []) + [
            (interval, self.lease.guard(task)) for interval, task in shared]

    def _purge_rpc_nonces(self):
        rpc_nonces.purge(cyborg_context.get_admin_context())

    # The agents' methods: the host they name must be the proven sender
    # (cyborg.common.signing). Every other method is the API's.

    @signing.host_method('hello', 'hostname')
    @messaging.expected_exceptions(exception.Invalid, exception.AgentConflict,
                                   exception.ServiceUnavailable)
    def agent_hello(self, context, hello):
        host = self.liveness.hello(context, hello)
        try:
            self.binding.restore_mdevs(context, hello.hostname)
        except Exception:
            # The hello stands; the next one tries again.
            LOG.exception('Cannot ask %s to restore the mdevs of its bound '
                          'ARQs', hello.hostname)
        if versionutils.convert_version_to_tuple(hello.VERSION) < (1, 2):
            # An agent of an older release knows Host 1.1 at most.
            return host.obj_to_primitive(target_version='1.1')
        # Where its heartbeats cost us least (None: by RPC).
        host.heartbeat_topic = (self.heartbeats.topic
                                if self.heartbeats is not None else None)
        return host

    @signing.host_method('hostname')
    @messaging.expected_exceptions(exception.ServiceUnavailable)
    def agent_heartbeat(self, context, hostname):
        self.liveness.heartbeat(context, hostname)

    # Taken again, a report is refused as older than the last one applied,
    # or is the content the host's rows show (cyborg.conductor.reporting):
    # no nonce written for the reports that change nothing.
    @signing.replays_harmless
    @signing.host_method('hostname')
    @messaging.expected_exceptions(exception.Invalid, exception.NotFound,
                                   exception.ServiceUnavailable)
    def report_data(self, context, hostname, devices, report_hash,
                    report_seq=None, hardware=None):
        return self.reporting.report(context, hostname, devices, report_hash,
                                     report_seq, hardware)

    @messaging.expected_exceptions(*_API_ERRORS)
    def device_profile_create(self, context, values):
        return self.device_profiles.create(context, values)

    @messaging.expected_exceptions(*_API_ERRORS)
    def device_profile_delete(self, context, uuids):
        return self.device_profiles.delete(context, uuids)

    @messaging.expected_exceptions(*_API_ERRORS)
    def arq_create(self, context, device_profile_name, project_id,
                   views=False):
        """The uuids of the new ARQs; with ``views`` (1.7), their views
        as ``db_arqs.to_primitive`` gives them, which the API shows
        without reading them back."""
        created = self.binding.create(context, device_profile_name,
                                      project_id)
        if views:
            return [db_arqs.to_primitive(view) for view in created]
        return [view.uuid for view in created]

    @messaging.expected_exceptions(*_API_ERRORS)
    def arq_apply_patch(self, context, patch, project_id):
        return self.binding.apply_patch(context, patch, project_id)

    @messaging.expected_exceptions(*_API_ERRORS)
    def arq_delete(self, context, arq_uuids=None, instance_uuid=None,
                   project_id=None):
        return self.binding.delete(context, arq_uuids=arq_uuids,
                                   instance_uuid=instance_uuid,
                                   project_id=project_id)

    @messaging.expected_exceptions(*_API_ERRORS)
    def deployable_program(self, context, deployable_uuid, image_uuid):
        return self.inventory.program(context, deployable_uuid, image_uuid)

    @messaging.expected_exceptions(*_API_ERRORS,
                                   exception.DeviceSetupFailed)
    def device_set_status(self, context, device_uuid, status):
        return self.devices.set_status(context, device_uuid, status)

    @messaging.expected_exceptions(*_API_ERRORS)
    def attribute_create(self, context, deployable_id, key, value):
        return self.inventory.attribute_create(context, deployable_id, key,
                                               value)

    @messaging.expected_exceptions(*_API_ERRORS)
    def attribute_delete(self, context, uuid):
        return self.inventory.attribute_delete(context, uuid)

    @messaging.expected_exceptions(*_API_ERRORS,
                                   exception.ProvisioningFailed)
    def accelerator_create(self, context, name, uuid=None):
        return self.accelerators.create(context, name, uuid)

    @messaging.expected_exceptions(*_API_ERRORS)
    def accelerator_update_spec(self, context, uuid, expected_version,
                                remotable, acc_capability):
        return self.accelerators.update_spec(
            context, uuid, expected_version, remotable, acc_capability)

    @messaging.expected_exceptions(*_API_ERRORS)
    def accelerator_attach(self, context, uuid, instance_uuid=None,
                           host=None):
        return self.accelerators.attach(context, uuid, instance_uuid, host)

    @messaging.expected_exceptions(*_API_ERRORS)
    def accelerator_detach(self, context, uuid):
        return self.accelerators.detach(context, uuid)

    @messaging.expected_exceptions(*_API_ERRORS)
    def driver_install(self, context, name, hostname=None):
        return self.drivers.install(context, name, hostname)

    @messaging.expected_exceptions(*_API_ERRORS)
    def driver_uninstall(self, context, name, hostname=None):
        return self.drivers.uninstall(context, name, hostname)

    @messaging.expected_exceptions(*_API_ERRORS)
    def driver_update(self, context, name, hostname=None):
        return self.drivers.update(context, name, hostname)

    @messaging.expected_exceptions(*_API_ERRORS)
    def discover_hosts(self, context, hostname=None, timeout=None):
        return self.drivers.discover(context, hostname, timeout)

    @messaging.expected_exceptions(*_API_ERRORS)
    def attachment_create(self, context, instance_uuid, profile_name,
                          hostname=None):
        return self.attachments.attach(context, instance_uuid, profile_name,
                                       hostname)

    @messaging.expected_exceptions(*_API_ERRORS)
    def attachment_delete(self, context, instance_uuid):
        return self.attachments.detach(context, instance_uuid)
