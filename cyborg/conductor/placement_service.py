"""The conductor's one owner of Placement.

The ConductorManager builds one PlacementService and hands it to every
workflow that talks to Placement (reports, device status, v1
accelerators, attachments, FPGA programming), so a conductor holds one
Placement client however many workflows use it. The service owns:

* the client, connected on first use (``client``);
* the host sync (``sync_or_mark_pending``, with
  ``placement_sync.PlacementSync.apply_tree`` doing the work) and what
  follows when it fails: the host is marked pending and its sync
  generation forgotten, so the periodic retry
  (``retry_pending``) and the host's next report both sync it again;
* the sync of a host from what the database shows now
  (``resync_host``), which the periodic retry and device status changes
  use;
* the one retry of writes guarded by a generation (a provider's or a
  consumer's) when another writer moved it meanwhile
  (``retry_on_conflict``).
"""

from keystoneauth1 import exceptions as ks_exceptions
from openstack import exceptions as sdk_exceptions
from oslo_log import log as logging

from cyborg.common.clients import placement
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.conductor import placement_sync
from cyborg.db import devices as db_devices
from cyborg.db import hosts as db_hosts

LOG = logging.getLogger(__name__)

# Placement down, unreachable or refusing: the sync is retried later.
SYNC_ERRORS = (exception.PlacementError, ks_exceptions.ClientException,
               sdk_exceptions.SDKException)

GENERATION_CONFLICT = 'placement.concurrent_update'
MAX_ATTEMPTS = 4


class PlacementService:
    """One conductor's Placement: its client, host syncs and retries."""

    def __init__(self, conf, client=None):
        self.conf = conf
        self._client = client
        #: The host sync; it uses this service's client and retry.
        self.sync = placement_sync.PlacementSync(self)

    @property
    def client(self):
        """The openstacksdk Placement proxy, connected on first use."""
        if self._client is None:
            self._client = placement.connect(self.conf)
        return self._client

    def periodic_tasks(self):
        return [(self.conf.conductor.placement_retry_interval,
                 self.retry_pending)]

    @staticmethod
    def retry_on_conflict(write, what, attempts=MAX_ATTEMPTS):
        """``write(attempt)`` (attempt 1, 2, ...), a write guarded by a
        generation; again while Placement answers that another writer
        moved that generation, ``attempts`` times at most. From the
        second attempt on, ``write`` re-reads the generation."""
        for attempt in range(1, attempts + 1):
            try:
                return write(attempt)
            except exception.PlacementError as e:
                if (attempt == attempts or
                        not placement.is_conflict(e, GENERATION_CONFLICT)):
                    raise
                LOG.debug('Generation conflict on %s; retrying', what)

    def sync_or_mark_pending(self, context, hostname, providers, names=None,
                  fresh=False):
        """Make Placement show ``providers`` under the compute node of
        ``hostname`` (see PlacementSync.apply_tree, also for ``fresh``).
        False when Placement failed: the host is then marked pending."""
        try:
            self.sync.apply_tree(hostname, providers, names, fresh)
        except SYNC_ERRORS as e:
            LOG.warning('Placement could not be synced for host %s; it '
                        'will be by the periodic retry or on its next '
                        'report: %s', hostname, e)
            self.sync_failed(context, hostname)
            return False
        return True

    @staticmethod
    def sync_failed(context, hostname):
        """Part of a failed sync may have landed after a newer report's:
        the host counts as unsynced, so its next report syncs again, and
        the periodic retry syncs it before."""
        db_hosts.set_sync_pending(context, hostname, True)
        db_hosts.forget_sync(context, hostname)

    def _host_down(self, context, hostname):
        if not self.conf.conductor.reserve_down_hosts:
            return False
        try:
            return db_hosts.get_by_hostname(context,
                                            hostname)[0].status == 'down'
        except exception.HostNotFound:
            return False

    def resync_host(self, context, hostname):
        """Placement shows the host's deployables as the database does
        (all reserved while the host is down, with ``[conductor]
        reserve_down_hosts``); False (and the host pending) when
        Placement failed."""
        before = db_hosts.get_report_states(context, [hostname]).get(
            hostname)
        providers = placement_sync.wanted_providers(
            db_devices.host_providers(context, hostname),
            reserve_all=self._host_down(context, hostname))
        if not self.sync_or_mark_pending(context, hostname, providers):
            return False
        db_hosts.set_sync_pending(context, hostname, False)
        if before is not None:
            # Placement now shows the rows of that report, if no newer
            # one changed them meanwhile: its agent's resend is answered
            # at once.
            db_hosts.mark_synced(context, before.host_id,
                                   before.generation)
        return True

    def retry_pending(self, context=None):
        """Periodic: sync the hosts Placement missed."""
        context = context or cyborg_context.get_admin_context()
        for hostname in db_hosts.sync_pending_hosts(context):
            self.resync_host(context, hostname)
