"""Operator changes to the inventory: FPGA programming and attributes.

Programming a deployable (``program``, and ``program_for_bind`` for ARQ
binds whose device profile asks for a bitstream or a function):

1. read the deployable, its device's host and control path id;
2. check the image in Glance (by id, or the one image with the asked
   ``accel:function_id``);
3. ask the agent on the device's host to program it (``fpga_program``);
4. unlike upstream, record the image as the deployable's
   ``bitstream_id`` and replace the provider's ``CUSTOM_FPGA_FUNCTION_ID*``
   trait in Placement by the image's function, so the scheduler sees
   what the FPGA now does.
"""

import re

from oslo_log import log as logging

from cyborg.common.clients import glance
from cyborg.common.clients import placement
from cyborg.common import exception
from cyborg.conductor import agents as agent_gateway
from cyborg.conductor import placement_service
from cyborg.db import attributes as db_attributes
from cyborg.db import deployables as db_deployables

LOG = logging.getLogger(__name__)

FUNCTION_TRAIT_PREFIX = 'CUSTOM_FPGA_FUNCTION_ID'
BITSTREAM_ID = 'accel:bitstream_id'
_NOT_TRAIT_CHARS = re.compile('[^A-Z0-9_]')


def function_trait(driver_name, function_id):
    """The trait telling that a deployable of ``driver_name`` runs
    ``function_id``: upper case, anything but ``[A-Z0-9_]`` made ``_``
    (upstream kept ``-``, which Placement refuses)."""
    parts = [FUNCTION_TRAIT_PREFIX, driver_name or '', str(function_id)]
    name = '_'.join(part for part in parts if part)
    return _NOT_TRAIT_CHARS.sub('_', name.upper())[:255]


def wanted_traits(current, trait):
    """``current`` without function traits, plus ``trait`` if any."""
    kept = {t for t in current if not t.startswith(FUNCTION_TRAIT_PREFIX)}
    return kept | {trait} if trait else kept


def requested_image(properties):
    """(``accel:bitstream_id``, ``accel:function_id``) a device profile
    group asks for; asking for both is refused."""
    bitstream_id = properties.get(BITSTREAM_ID)
    function_id = properties.get(glance.FUNCTION_ID)
    if bitstream_id and function_id:
        raise exception.InvalidParameterValue(
            err='A device profile group may ask for %s or %s, not both.' %
            (BITSTREAM_ID, glance.FUNCTION_ID))
    return bitstream_id, function_id


class Inventory:

    def __init__(self, conf, placement=None, agents=None):
        self.conf = conf
        #: The conductor's agent gateway.
        self.agents = agents or agent_gateway.Agents()
        #: The conductor's PlacementService.
        self.placement = (placement or
                          placement_service.PlacementService(conf))

    # Programming

    def program(self, context, deployable_uuid, image_uuid):
        """Program deployable ``deployable_uuid`` with Glance image
        ``image_uuid`` (the ``PATCH .../program`` of the API)."""
        target = self._target(context, deployable_uuid)
        image = glance.get_image(glance.connect(self.conf), image_uuid)
        self._program(context, target, target.hostname, image)

    def program_for_bind(self, context, deployable_uuid, accel_properties,
                         hostname):
        """Program a deployable for an ARQ bind when its device profile
        group (``accel_properties``) asks for ``accel:bitstream_id`` or
        ``accel:function_id``. Returns the image id the deployable now
        runs, or None when the group asks for nothing. Nothing is done
        when the deployable runs that image already."""
        bitstream_id, function_id = requested_image(accel_properties)
        if not (bitstream_id or function_id):
            return None
        target = self._target(context, deployable_uuid)
        if bitstream_id and bitstream_id == target.bitstream_id:
            return bitstream_id
        client = glance.connect(self.conf)
        if bitstream_id:
            image = glance.get_image(client, bitstream_id)
        else:
            image = glance.find_by_function_id(client, function_id)
            if image['id'] == target.bitstream_id:
                return image['id']
        self._program(context, target, hostname, image)
        return image['id']

    def _target(self, context, deployable_uuid):
        target = db_deployables.get_program_target(context, deployable_uuid)
        reason = None
        if target.device_type != 'FPGA':
            reason = 'its device is a %s, not an FPGA' % target.device_type
        elif len(target.controlpath_ids) != 1:
            reason = ('its device has %d control path ids, not one' %
                      len(target.controlpath_ids))
        if reason:
            raise exception.DeployableNotProgrammable(
                deployable=deployable_uuid, reason=reason)
        return target

    def _program(self, context, target, hostname, image):
        LOG.info('Programming deployable %s (%s) on host %s with image %s',
                 target.name, target.uuid, hostname, image['id'])
        self._call_agent(context, target, hostname, image['id'])
        db_deployables.set_bitstream(context, target.id, image['id'])
        function_id = image.get(glance.FUNCTION_ID)
        trait = (function_trait(target.driver_name, function_id)
                 if function_id else None)
        if target.rp_uuid:
            self._set_function_trait(target.rp_uuid, trait)

    def _call_agent(self, context, target, hostname, image_uuid):
        def failed(reason):
            return exception.FPGAProgramError(
                deployable=target.uuid, host=hostname, reason=reason)
        with agent_gateway.failures(failed):
            result = self.agents.fpga_program(
                context, hostname, target.controlpath_ids[0], image_uuid,
                target.driver_name)
        if result is False:
            raise failed('the %s driver reported a failure' %
                         target.driver_name)

    def _set_function_trait(self, rp_uuid, trait):
        """Replace the provider's function trait by ``trait`` (or none),
        re-reading on a generation conflict."""
        client = self.placement.client

        def write(_attempt):
            current = placement.get_traits(client, rp_uuid)
            if current is None:
                LOG.warning('Provider %s is not in Placement; its traits '
                            'follow with the next report', rp_uuid)
                return
            traits, generation = current
            wanted = wanted_traits(traits, trait)
            if wanted == traits:
                return
            if trait:
                placement.ensure_trait(client, trait)
            placement.set_traits(client, rp_uuid, generation, wanted)
        self.placement.retry_on_conflict(write, 'provider %s' % rp_uuid)

    # Attributes

    def attribute_create(self, context, deployable_id, key, value):
        """Add attribute ``key`` to deployable ``deployable_id`` (an
        integer id); returns its uuid."""
        return db_attributes.create(context, deployable_id, key, value)

    def attribute_delete(self, context, uuid):
        db_attributes.delete(context, uuid)
