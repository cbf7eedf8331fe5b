"""Enabling and disabling devices.

A disabled device (status ``maintaining``) keeps its providers in
Placement with the whole inventory reserved, so nothing new lands on it
while instances that use it keep running; enabling it releases the
reservation. The report sync keeps that reservation (it builds the
inventory from the device's status), so a later agent report does not
undo it. With ``[conductor] reserve_down_hosts`` every device of a host
that is down is reserved the same way until the host is back. When
Placement cannot be reached the status is still recorded and the host is
synced by the periodic retry of ``placement_service`` once Placement is
back.

With ``[agent] new_device_state = inactive`` devices arrive disabled and
enabling one first runs its driver's setup step on its host (the seed's
"mark it ready and the agent calls the driver's install").
"""

from oslo_log import log as logging

from cyborg.common import exception
from cyborg.conductor import agents as agent_gateway
from cyborg.conductor import placement_service
from cyborg.db import devices as db_devices
from cyborg.i18n import _

LOG = logging.getLogger(__name__)

STATUSES = ('enabled', db_devices.DISABLED)


class Devices:

    def __init__(self, conf, placement=None, agents=None):
        self.conf = conf
        #: The conductor's agent gateway.
        self.agents = agents or agent_gateway.Agents()
        #: The conductor's PlacementService.
        self.placement = (placement or
                          placement_service.PlacementService(conf))

    def set_status(self, context, device_uuid, status):
        if status not in STATUSES:
            raise exception.InvalidParameterValue(
                err=_('A device status is one of %s.') % ', '.join(STATUSES))
        if status == 'enabled' and self.conf.agent.new_device_state == (
                'inactive'):
            self._set_up(context, device_uuid)
        hostname = db_devices.set_status(context, device_uuid, status)
        LOG.info('Device %s of host %s is now %s', device_uuid, hostname,
                 status)
        self.placement.resync_host(context, hostname)

    def _set_up(self, context, device_uuid):
        """The seed's operator flow (``[agent] new_device_state =
        inactive``): a device is offered only once an operator enables
        it, and enabling it runs its driver's setup step on its host
        first (idempotent, so enabling again is harmless)."""
        hostname, cpid, drivers = db_devices.setup_target(context,
                                                          device_uuid)
        if cpid is None:
            return

        def failed(reason):
            return exception.DeviceSetupFailed(
                device=device_uuid, host=hostname, reason=reason)
        for driver_name in drivers:
            with agent_gateway.failures(failed):
                self.agents.setup_device(context, hostname, cpid,
                                         driver_name)

    def host_status_changed(self, context, hostname):
        """A host went down or came back: with ``[conductor]
        reserve_down_hosts``, its inventory is reserved or released."""
        if self.conf.conductor.reserve_down_hosts:
            self.placement.resync_host(context, hostname)

