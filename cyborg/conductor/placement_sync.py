"""Make Placement show a host's deployables, after the database has them.

The layout is upstream's, which Nova depends on: under the compute node
provider (found by name, see ``compute_node_names``) one child provider per
deployable, named by the deployable, with uuid ``uuid3(NAMESPACE_DNS,
name)``; its inventory is ``{rc: {total: n, max_unit: n}}`` and its
traits are the values of the deployable's attributes whose key starts
with ``trait``, plus ``OWNER_CYBORG``.

``apply_tree`` makes the host's subtree match the wanted providers as a
whole, so it is idempotent: after Placement was unreachable the next call
catches up, including deletions whose database rows are already gone.
cyborg's providers are recognised by their uuid, derived from their name
as above (so upstream's are too), not by ``OWNER_CYBORG``: a sync that
stopped before it set a new provider's traits leaves one without it.
Unlike upstream it never deletes traits or resource classes globally,
since other providers may use them.
"""

import collections
import uuid

from oslo_log import log as logging
import os_resource_classes
import os_traits

from cyborg.common.clients import placement
from cyborg.common import coalesce
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.db import hosts as db_hosts

LOG = logging.getLogger(__name__)

OWNER_TRAIT = os_traits.OWNER_CYBORG
# The other services' owner traits (OWNER_NOVA, ...): Nova 34's scheduler
# requires OWNER_NOVA on the providers it may pick for itself, so none of
# ours may carry one, whatever a deployable's attributes say.
FOREIGN_OWNER_TRAITS = frozenset(os_traits.get_traits('OWNER_')) - {
    OWNER_TRAIT}
RESHAPE_GENERATION_STEP = 2

#: Syncs whose inventories are set in one ``POST /reshaper`` at most.
#: Placement's cost of one is about 22 ms plus 3.5 ms per provider, so
#: several hosts' syncs that reach this step together share one.
MAX_RESHAPE_BATCH = 16

#: The outcome of a sync's inventories whose shared request failed: the
#: sync sets them in a request of its own.
_ALONE = object()

# ``reserved``: the units nothing new may be scheduled on: the whole
# inventory while the device is disabled (status ``maintaining``) or its
# host is down, else one per attached v1 accelerator. True means all.
Provider = collections.namedtuple(
    'Provider', 'name uuid resource_class total traits reserved')
Provider.__new__.__defaults__ = (False,)


def provider_uuid(name):
    """The uuid of a deployable's provider, derived from its name as
    upstream derives it (Nova and existing deployments rely on it)."""
    return str(uuid.uuid3(uuid.NAMESPACE_DNS, name))


def is_ours(provider):
    """Whether a provider (a dict from Placement) is a deployable's, by
    its uuid; a compute node's or another service's never derives from
    its name this way."""
    return provider['uuid'] == provider_uuid(provider['name'])


def _valid_class(name):
    return (name in os_resource_classes.STANDARDS
            or os_resource_classes.is_custom(name))


def _valid_trait(name):
    return os_traits.is_custom(name) or name in os_traits.get_traits()


def wanted_providers(rows, reserve_all=False):
    """The Providers for ``rows`` (deployable row, {key: value},
    reserved units), as ``db_devices.get_providers`` gives them;
    deployables without a usable resource class are left out."""
    providers = (wanted_provider(row.name, row.num_accelerators, attributes,
                                 True if reserve_all else reserved)
                 for row, attributes, reserved in rows)
    return [p for p in providers if p]


def reserved_units(provider):
    """How many of the provider's units are reserved."""
    if provider.reserved is True:
        return provider.total
    return min(int(provider.reserved or 0), provider.total)


def wanted_provider(name, num_accelerators, attributes, reserved=False):
    """The Provider for a deployable with ``attributes`` ({key: value}),
    or None when it has no usable resource class."""
    rc = attributes.get('rc')
    if not rc or not _valid_class(rc):
        LOG.warning('Deployable %s has no valid resource class (%r); it is '
                    'not reported to Placement', name, rc)
        return None
    traits = {OWNER_TRAIT}
    for key, value in attributes.items():
        if not key.startswith('trait'):
            continue
        if value in FOREIGN_OWNER_TRAITS:
            LOG.warning('Deployable %s: %s marks another service\'s '
                        'providers; not reported (its provider carries %s)',
                        name, value, OWNER_TRAIT)
        elif _valid_trait(value):
            traits.add(value)
        else:
            LOG.warning('Deployable %s: %r is not a valid trait name; '
                        'ignored', name, value)
    return Provider(name, provider_uuid(name), rc, num_accelerators,
                    frozenset(traits), reserved)


def compute_node_names(context, hostname, resource_provider_name=None):
    """The names the compute node provider of ``hostname`` is looked for
    under, in this order: the one its agent gave in its hello (``[agent]
    resource_provider_name``, often the fully qualified name Nova uses),
    then the hostname itself (all there is for a host that is unknown or
    whose agent gave no name). Read from the database unless the caller,
    holding the host's row, passes ``resource_provider_name``."""
    name = resource_provider_name
    if name is None:
        name = db_hosts.resource_provider_name(context, hostname)
    return [name, hostname] if name and name != hostname else [hostname]


def find_compute_node(client, names):
    """The first provider of ``names`` that Placement has, as a dict, or
    None."""
    for name in names:
        provider = placement.find_provider(client, name)
        if provider is not None:
            return provider
    return None


class _Occupied(Exception):
    """A provider a fresh sync was to create exists already."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


class PlacementSync:
    """Keeps Placement in line with the database, one host at a time;
    built by its owner, the conductor's PlacementService
    (``cyborg.conductor.placement_service``), whose client and conflict
    retry it uses."""

    def __init__(self, service):
        self.service = service
        # Custom classes and traits known to exist; Placement never
        # forgets them unless someone deletes them on purpose.
        self._classes = set()
        self._traits = set()
        # Whether Placement has POST /reshaper (microversion 1.30).
        self._reshaper = True
        # The inventories of syncs that reach them together are set
        # together.
        self._reshapes = coalesce.Coalescer(self._reshape_batch,
                                            MAX_RESHAPE_BATCH)

    @property
    def client(self):
        return self.service.client

    def apply_tree(self, hostname, providers, names=None, fresh=False):
        """Make the providers under the compute node of ``hostname`` (the
        first of ``names`` that exists, by default its
        ``compute_node_names``) be exactly ``providers``. Raises
        PlacementError or a keystoneauth error when Placement fails; the
        caller retries later.

        ``fresh``: no sync of this host was ever attempted (its first
        report is being synced), so Placement holds none of its
        providers and the tree is not listed. Should one of them exist
        all the same (a database restored from before the host), the
        whole tree is listed and synced after all."""
        names = names or compute_node_names(
            cyborg_context.get_admin_context(), hostname)
        root = find_compute_node(self.client, names)
        if root is None:
            raise exception.PlacementError(
                method='GET', url='/resource_providers?name=%s' % names[-1],
                status=404, detail='no compute node provider named %s' %
                ' or '.join(names))
        if fresh:
            try:
                return self._sync_tree(root['uuid'], providers, {},
                                       adopt=False)
            except _Occupied as e:
                LOG.info('Placement already has provider %s of host %s, '
                         'whose first report this is; syncing its whole '
                         'tree', e.name, hostname)
        current = {p['uuid']: p for p in placement.list_tree(
            self.client, root['uuid']) if is_ours(p)}
        self._sync_tree(root['uuid'], providers, current)

    def _sync_tree(self, root_uuid, providers, current, adopt=True):
        """``providers`` under ``root_uuid``, where Placement has the
        providers ``current`` ({uuid: provider}); those of ``current``
        not wanted are deleted. Without ``adopt`` a provider that exists
        although it is not in ``current`` raises _Occupied."""
        generations = {}
        for provider in providers:
            self._ensure_names(provider)
            existing = current.pop(provider.uuid, None)
            if existing is None:
                existing = self._create(root_uuid, provider, adopt)
            generations[provider.uuid] = existing['generation']
        self._set_inventories(providers, generations)
        for provider in providers:
            self._retry_on_conflict(
                provider.uuid, generations[provider.uuid],
                lambda g, p=provider: placement.set_traits(
                    self.client, p.uuid, g, p.traits))
        for stale in current.values():
            self._delete(stale)

    def _set_inventories(self, providers, generations):
        """Every provider's inventory, in one request when there are
        several; ``generations`` is updated."""
        wanted = {p.uuid: {p.resource_class: {
            'total': p.total, 'max_unit': p.total,
            'reserved': reserved_units(p)}} for p in providers}
        if len(wanted) > 1 and self._reshaper:
            request = {uuid: (generations[uuid], inventories)
                       for uuid, inventories in wanted.items()}
            try:
                if self._reshapes.submit(request) is _ALONE:
                    placement.set_many_inventories(self.client, request)
            except exception.PlacementError as e:
                if e.kwargs.get('status') in (403, 404, 406):
                    # A Placement older than microversion 1.30, or
                    # credentials without the service role its policy
                    # asks for: not again in this process.
                    self._reshaper = False
                    LOG.info('Inventories are set one provider at a time: '
                             '%s', e)
                else:
                    LOG.debug('One request for %d inventories failed (%s);'
                              ' setting them one by one', len(wanted), e)
            else:
                # The reshaper writes each inventory twice (an interim
                # and the final one), so each generation went up by two.
                # Were that to change, the conflict retry of the traits
                # re-reads it.
                for uuid in wanted:
                    generations[uuid] += RESHAPE_GENERATION_STEP
                return
        for uuid, inventories in wanted.items():
            generations[uuid] = self._retry_on_conflict(
                uuid, generations[uuid],
                lambda g, u=uuid, i=inventories: placement.set_inventories(
                    self.client, u, g, i))

    def _reshape_batch(self, requests):
        """The inventories of several syncs (``{uuid: (generation,
        inventories)}`` each) in one ``POST /reshaper``; the outcome of
        each is None when set, else ``_ALONE``: the request is all or
        nothing, so when it fails each sync sets its own and fails, if
        it does, on its own account. A lone sync's request is its own,
        and so is its error."""
        if len(requests) == 1:
            try:
                placement.set_many_inventories(self.client, requests[0])
            except Exception as e:
                return [e]
            return [None]
        outcomes, together = [], {}
        for request in requests:
            if together.keys() & request.keys():
                # The same provider in two syncs at once: the later one
                # goes on its own, after this request.
                outcomes.append(_ALONE)
                continue
            together.update(request)
            outcomes.append(None)
        try:
            placement.set_many_inventories(self.client, together)
        except Exception as e:
            LOG.debug('The inventories of %d syncs in one request failed '
                      '(%s); each sync sets its own', outcomes.count(None), e)
            return [_ALONE] * len(requests)
        return outcomes

    def _ensure_names(self, provider):
        rc = provider.resource_class
        if os_resource_classes.is_custom(rc) and rc not in self._classes:
            placement.ensure_resource_class(self.client, rc)
            self._classes.add(rc)
        for trait in provider.traits:
            if os_traits.is_custom(trait) and trait not in self._traits:
                placement.ensure_trait(self.client, trait)
                self._traits.add(trait)

    def _create(self, root_uuid, provider, adopt=True):
        try:
            return placement.create_provider(
                self.client, provider.name, uuid=provider.uuid,
                parent_uuid=root_uuid)
        except exception.PlacementError as e:
            if not placement.is_conflict(e):
                raise
            if not adopt:
                raise _Occupied(provider.name) from e
        # It exists under another compute node (a host renamed, say);
        # take it over rather than fail forever.
        existing = placement.get_provider(self.client, provider.uuid)
        if existing is None:
            raise exception.PlacementError(
                method='POST', url='/resource_providers', status=409,
                detail='a provider named %s exists with another uuid' %
                provider.name)
        if existing.get('parent_provider_uuid') != root_uuid:
            LOG.warning('Provider %s (%s) is not under compute node %s',
                        provider.name, provider.uuid, root_uuid)
        return existing

    def _retry_on_conflict(self, rp_uuid, generation, put):
        """``put(generation)``, re-reading the generation when another
        writer changed the provider meanwhile."""
        def write(attempt):
            if attempt == 1:
                return put(generation)
            current = placement.get_provider(self.client, rp_uuid)
            if current is None:
                # Deleted meanwhile, by the sync of a newer report of the
                # host on another conductor: this sync fails, and the
                # host's newest report is synced again.
                raise exception.PlacementError(
                    method='GET', url='/resource_providers/%s' % rp_uuid,
                    status=404, detail='provider %s was deleted by '
                    'another writer' % rp_uuid)
            return put(current['generation'])
        return self.service.retry_on_conflict(write, 'provider %s' % rp_uuid)

    def _delete(self, provider):
        try:
            placement.delete_provider(self.client, provider['uuid'])
        except exception.PlacementError as e:
            if not placement.is_conflict(e):
                raise
            LOG.warning('Provider %s (%s) is in use and is kept until its '
                        'allocations are gone', provider['name'],
                        provider['uuid'])
            return
        LOG.info('Deleted provider %s (%s)', provider['name'],
                 provider['uuid'])
