"""Accelerators of the v1 API: provisioning, specs, attach and detach.

Provisioning (``POST /v1/accelerators``) goes api -> conductor -> agent
-> driver, as the Pike API proposal says:

1. the conductor claims the first free accelerator unit for the new
   name, in one transaction (state ``provisioning``);
2. it asks the agent of that deployable's host to set the device up
   (``setup_device``: the driver's setup step, if it has one);
3. the accelerator becomes ``available``; if the agent failed, the claim
   is dropped and the caller gets the reason. A claim whose conductor
   died in between is dropped by the periodic ``expire_claims``, so the
   name is free again and the request can be repeated.

An accelerator is one unit of a deployable (the fake driver's card has
16): provisioning hands out units until every unit of the ready
hardware is provisioned or used by an accelerator request.

Attach and detach are, as the proposal says, mainly a state change in
the database; each attached accelerator also reserves one unit of its
deployable's inventory in Placement so that Nova schedules nothing onto
it. Attaching is refused when no unit is left for it, detaching while
allocations sit on its unit (the deployable is overcommitted).
"""

import datetime

from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import timeutils

from cyborg.common.clients import placement
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.conductor import agents as agent_gateway
from cyborg.conductor import placement_service
from cyborg.db import accelerators as db_accelerators

LOG = logging.getLogger(__name__)

#: How often and after how long unfinished provisioning claims go.
EXPIRE_INTERVAL = 60
CLAIM_TTL = datetime.timedelta(minutes=5)


class Accelerators:

    def __init__(self, conf, devices, placement=None, agents=None):
        self.conf = conf
        #: The conductor's agent gateway.
        self.agents = agents or agent_gateway.Agents()
        #: cyborg.conductor.devices.Devices, which syncs a host's
        #: Placement inventory from the database.
        self.devices = devices
        #: The conductor's PlacementService.
        self.placement = placement or devices.placement

    def periodic_tasks(self):
        return [(EXPIRE_INTERVAL, self.expire_claims)]

    def create(self, context, name, uuid=None):
        claim = db_accelerators.claim(context, name, uuid)
        LOG.info('Provisioning accelerator %s (%s) on deployable %s of '
                 'host %s', name, claim.uuid, claim.deployable_uuid,
                 claim.hostname)
        try:
            self._setup(context, claim)
        except Exception:
            db_accelerators.delete(context, claim.uuid)
            raise
        if not db_accelerators.finish_provisioning(context, claim.uuid):
            raise exception.ProvisioningFailed(
                accelerator=name, host=claim.hostname,
                reason='its claim expired while the agent set it up; '
                       'try again')
        return claim.uuid

    def _setup(self, context, claim):
        def failed(reason):
            return exception.ProvisioningFailed(
                accelerator=claim.name, host=claim.hostname, reason=reason)
        if claim.controlpath_id is None:
            raise failed('its device has no control path id')
        with agent_gateway.failures(failed):
            self.agents.setup_device(context, claim.hostname,
                                     claim.controlpath_id, claim.driver_name)

    def expire_claims(self, context=None):
        """Periodic: drop provisioning claims nobody finished."""
        context = context or cyborg_context.get_admin_context()
        names = db_accelerators.delete_stale_provisioning(
            context, timeutils.utcnow() - CLAIM_TTL)
        for name in names:
            LOG.warning('Provisioning of accelerator %s never finished; '
                        'its claim is dropped', name)

    def update_spec(self, context, uuid, expected_version, remotable,
                    acc_capability):
        """Replace the writable part of the spec; returns the new
        version."""
        return db_accelerators.set_spec(
            context, uuid, expected_version, remotable,
            jsonutils.dumps(acc_capability, sort_keys=True))

    def attach(self, context, uuid, instance_uuid=None, host=None):
        """Attach to an instance, a host, or (neither given) the host
        the accelerator is on; its unit is then reserved in Placement."""
        holders = db_accelerators.allocation_holders(context, uuid)
        used, users = self._usage(holders)
        if holders.total and used + holders.attached + 1 > holders.total:
            raise exception.AcceleratorBusy(
                accelerator=uuid, reason='all %d units of its deployable '
                'are attached or allocated (%s)' % (
                    holders.total, ', '.join(users) or 'attached'))
        hostname = db_accelerators.attach(context, uuid, instance_uuid, host)
        LOG.info('Accelerator %s attached to %s', uuid,
                 'instance %s' % instance_uuid if instance_uuid
                 else 'host %s' % (host or hostname))
        if hostname:
            self.devices.placement.resync_host(context, hostname)

    def detach(self, context, uuid):
        """Detach; refused while the deployable is overcommitted, that
        is while allocations sit on the unit this accelerator holds."""
        holders = db_accelerators.allocation_holders(context, uuid)
        used, users = self._usage(holders)
        if used and used + holders.attached > holders.total:
            raise exception.AcceleratorAllocated(
                accelerator=uuid, holders=', '.join(users))
        hostname = db_accelerators.detach(context, uuid)
        LOG.info('Accelerator %s detached', uuid)
        if hostname:
            self.devices.placement.resync_host(context, hostname)

    def _usage(self, holders):
        """(units used by others, their names): Placement's allocations
        on the deployable's provider, or its ARQs if they are more."""
        allocations = self._allocations(holders.rp_uuid)
        placement_used = sum(sum(resources.values())
                             for resources in allocations.values())
        users = ['accelerator request %s' % arq for arq in holders.arqs]
        users += ['Placement consumer %s' % consumer
                  for consumer in sorted(allocations)]
        return max(placement_used, len(holders.arqs)), users

    def _allocations(self, rp_uuid):
        """``{consumer: {resource class: amount}}`` on provider
        ``rp_uuid``; nothing when Placement cannot say (the database's
        ARQs count then)."""
        if not rp_uuid:
            return {}
        try:
            allocations = placement.get_allocations(self.placement.client,
                                                  rp_uuid)
        except placement_service.SYNC_ERRORS as e:
            LOG.warning('Placement could not list the allocations of '
                        'provider %s: %s', rp_uuid, e)
            return {}
        return allocations or {}
