"""attach-instance and detach-instance (microversion 2.5): accelerators
of a device profile attached to an instance outside a Nova boot, through
the same machinery Nova uses, so Placement, cyborg and Nova agree:

1. Placement picks providers for all the profile's groups at once (one
   granular ``GET /allocation_candidates``, each group limited to
   cyborg's providers with ``OWNER_CYBORG`` and, if asked, to one host's
   tree), and the instance's allocations get those resources added;
2. the profile's ARQs are created and bound to the chosen providers
   (attach handles claimed, FPGAs programmed, mdevs created; Nova gets
   its ``accelerator-request-bound`` events when configured);
3. if any bind fails, the ARQs are deleted and the allocations taken
   back, and the caller is told why.

Detaching deletes the instance's ARQs (unbinding them) and removes
cyborg's providers from the instance's allocations, leaving anything
else (Nova's compute node resources) as it was.
"""

from oslo_log import log as logging

from cyborg.common.clients import placement
from cyborg.common import exception
from cyborg.common import profile_groups
from cyborg.common import states
from cyborg.conductor import placement_service
from cyborg.conductor import placement_sync
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import deployables as db_deployables
from cyborg.db import device_profiles as db_device_profiles

LOG = logging.getLogger(__name__)

MAX_ATTEMPTS = 3


def candidates_query(groups, tree_uuid=None):
    """The granular allocation candidates query of profile ``groups``:
    group ``i`` becomes suffix ``i + 1``."""
    query = {}
    for index, group in enumerate(groups):
        suffix = str(index + 1)
        amounts = profile_groups.resource_amounts(group)
        query['resources' + suffix] = ','.join(
            '%s:%d' % item for item in sorted(amounts.items()))
        required = [placement_sync.OWNER_TRAIT]
        for trait, how in sorted(profile_groups.traits(group).items()):
            required.append(trait if how == 'required' else '!' + trait)
        query['required' + suffix] = ','.join(required)
        if tree_uuid:
            query['in_tree' + suffix] = tree_uuid
    if len(groups) > 1:
        query['group_policy'] = 'none'
    return query


def merged(current, added):
    """Allocations ``current`` plus ``added`` (``{rp: {'resources':
    {rc: n}}}``)."""
    result = {rp: {'resources': dict(value['resources'])}
              for rp, value in current.items()}
    for rp, value in added.items():
        resources = result.setdefault(rp, {'resources': {}})['resources']
        for rc, amount in value['resources'].items():
            resources[rc] = resources.get(rc, 0) + amount
    return result


def without(current, rp_uuids):
    return {rp: value for rp, value in current.items()
            if rp not in rp_uuids}


class Attachments:

    def __init__(self, conf, binding, placement=None):
        self.conf = conf
        self.binding = binding
        #: The conductor's PlacementService.
        self.placement = (placement or
                          placement_service.PlacementService(conf))

    def _tree(self, context, hostname):
        """The uuid of the compute node provider of ``hostname``: a host
        whose agent registered, by the name it gave (then its hostname), or
        a provider name."""
        if not hostname:
            return None
        provider = placement_sync.find_compute_node(
            self.placement.client, placement_sync.compute_node_names(context,
                                                              hostname))
        if provider is None:
            raise exception.HostNotFound(host=hostname)
        return provider['uuid']

    def _update_allocations(self, consumer, change, context):
        """Apply ``change(current allocations)`` to the consumer's
        allocations, again when another writer moved its generation."""
        client = self.placement.client

        def write(_attempt):
            current, generation, project_id, user_id = (
                placement.get_consumer_allocations(client, consumer))
            placement.put_consumer_allocations(
                client, consumer, change(current), generation,
                project_id or context.project_id,
                user_id or context.user_id)
        self.placement.retry_on_conflict(write, 'consumer %s' % consumer,
                                         attempts=MAX_ATTEMPTS)

    def attach(self, context, instance_uuid, profile_name, hostname=None):
        """Attach the accelerators of ``profile_name`` to the instance;
        returns the uuids of its bound ARQs."""
        profile = db_device_profiles.get(context, profile_name)
        groups = db_device_profiles.groups_of(profile)
        where = ' on host %s' % hostname if hostname else ''
        tree_uuid = self._tree(context, hostname)
        request = placement.allocation_candidates(
            self.placement.client, candidates_query(groups, tree_uuid))
        if request is None:
            raise exception.NoAcceleratorForInstance(profile=profile.name,
                                                     where=where)
        chosen = request['allocations']
        try:
            self._update_allocations(
                instance_uuid, lambda current: merged(current, chosen),
                context)
        except exception.PlacementError as e:
            if not placement.is_conflict(e):
                raise
            # Someone took the last of it since Placement offered it.
            raise exception.NoAcceleratorForInstance(
                profile=profile.name, where=where) from e
        try:
            return self._bind(context, instance_uuid, profile,
                              request['mappings'])
        except Exception:
            self._update_allocations(
                instance_uuid, lambda current: without(current, chosen),
                context)
            raise

    def _bind(self, context, instance_uuid, profile, mappings):
        arqs = db_arqs.create(context, profile.name, context.project_id)
        uuids = [arq.uuid for arq in arqs]
        rps = {arq.uuid: mappings[str(arq.device_profile_group_id + 1)][0]
               for arq in arqs}
        hosts = db_deployables.hostnames_of_providers(context,
                                                      set(rps.values()))
        patch = {uuid: {'hostname': hosts.get(rp), 'device_rp_uuid': rp,
                        'instance_uuid': instance_uuid}
                 for uuid, rp in rps.items()}
        try:
            self.binding.apply_patch(context, patch, None,
                                     new_instances_only=False)
        except Exception:
            # Refused before any bind (a provider cyborg does not know,
            # say): the ARQs made for it go too.
            self.binding.delete(context, arq_uuids=uuids)
            raise
        failed = [arq.uuid for arq in db_arqs.get_many(context, uuids)
                  if arq.state != states.BOUND]
        if failed:
            self.binding.delete(context, arq_uuids=uuids)
            raise exception.AttachFailed(
                profile=profile.name, instance=instance_uuid,
                reason='the bind of ARQs %s failed (see the conductor '
                       'log)' % ', '.join(failed))
        LOG.info('Attached %d accelerators of profile %s to instance %s',
                 len(uuids), profile.name, instance_uuid)
        return uuids

    def detach(self, context, instance_uuid):
        arqs = db_arqs.get_all(context, instance_uuid=instance_uuid)
        if not arqs:
            raise exception.AttachmentNotFound(instance=instance_uuid)
        providers = {arq.device_rp_uuid for arq in arqs
                     if arq.device_rp_uuid}
        self.binding.delete(context, instance_uuid=instance_uuid)
        self._update_allocations(
            instance_uuid, lambda current: without(current, providers),
            context)
        LOG.info('Detached %d accelerators from instance %s', len(arqs),
                 instance_uuid)
