"""The ARQ lifecycle: create, bind, unbind, delete and recovery.

A bind is persisted at every step that waits on something outside the
database. In one transaction all ARQs of the request move to BindStarted
(or none does: a second bind of the same ARQ gets 409, and a bind for an
instance that has ARQs already gets 400, checked there so that two binds
for one instance cannot both pass), each claims a
free attach handle of the deployable behind the provider Nova picked
(BindFailed when none is free), and those whose device needs nothing
more move on to Bound. The others stay BindStarted with their handle
while their device is prepared (FPGA programmed or mdev created) by its
agent, then move to Bound, or to BindFailed with the handle released, in
a second transaction. The request returns once that is committed; Nova
gets one event per ARQ of the instance right after, off the request path
(``nova_events``), and the ARQs remember that it did. A conductor that
stops midway leaves ARQs in BindStarted with its name on them: on start
it fails those it owns, and a periodic task fails any left by others for
too long; both send Nova the events it has not had yet.
"""

import datetime
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import metrics
from cyborg.common import profile_groups
from cyborg.common import states
from cyborg.conductor import agents as agent_gateway
from cyborg.conductor import inventory
from cyborg.conductor import nova_events
from cyborg.conductor import report_checks
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import hosts as db_hosts

LOG = logging.getLogger(__name__)

MDEV = 'MDEV'
PROGRAM_KEYS = ('bitstream_id', 'function_id')
# A bind not finished after this long was left by a conductor that died.
BIND_TIMEOUT = datetime.timedelta(seconds=120)
PERIODIC_INTERVAL = 30


class Binding:

    def __init__(self, conf, inventory=None, agents=None):
        self.conf = conf
        #: The conductor's agent gateway.
        self.agents = agents or agent_gateway.Agents()
        self._inventory = inventory
        self.events = nova_events.NovaEvents(conf)

    @property
    def inventory(self):
        if self._inventory is None:
            self._inventory = inventory.Inventory(self.conf,
                                                  agents=self.agents)
        return self._inventory

    def periodic_tasks(self):
        return [(PERIODIC_INTERVAL, self.check)]

    def create(self, context, device_profile_name, project_id):
        """The views of the new ARQs (``db_arqs.ARQView``)."""
        views = db_arqs.create(context, device_profile_name, project_id)
        LOG.info('Created %d ARQs for device profile %s', len(views),
                 device_profile_name)
        return views

    def apply_patch(self, context, patch, project_id,
                    new_instances_only=True):
        """Unbind the ARQs mapped to None, bind the others. An instance
        that has ARQs already cannot be bound again (400), as Nova binds
        all the ARQs of an instance at once; attach-instance, which adds
        ARQs to an instance, says ``new_instances_only=False``."""
        for uuid in [u for u, values in patch.items() if values is None]:
            self._unbind(context, uuid, project_id)
        binds = {u: values for u, values in patch.items()
                 if values is not None}
        if not binds:
            return
        started = time.monotonic()
        try:
            claims, failed = db_arqs.bind(context, binds, project_id,
                                          self.conf.host, _ready,
                                          new_instances_only)
        except Exception:
            metrics.BINDS.labels('error').inc(len(binds))
            raise
        failed_uuids = set(failed)
        for uuid in failed:
            LOG.warning('Binding ARQ %s failed: no free attach handle on '
                        'provider %s', uuid, binds[uuid]['device_rp_uuid'])
        # Those neither failed nor claimed for a device to prepare are
        # Bound already.
        bound = len(binds) - len(failed) - len(claims)
        failed = len(failed)
        if claims:
            prepared, unprepared = self._prepare_all(context, claims)
            bound, failed = bound + prepared, failed + unprepared
        metrics.BINDS.labels(states.BOUND).inc(bound)
        metrics.BINDS.labels(states.BIND_FAILED).inc(failed)
        metrics.BIND_DURATION.observe(time.monotonic() - started)
        if new_instances_only and not claims:
            # Every ARQ of these instances is in ``binds`` (the bind
            # refused an instance with others) and resolved now.
            self.events.post_known(_resolved(binds, failed_uuids))
        else:
            self.events.post({values['instance_uuid']
                              for values in binds.values()})

    def _prepare_all(self, context, claims):
        """Prepare the devices of the ARQs left BindStarted, then finish
        their binds together; how many were bound and failed."""
        bound, failed = [], []
        for claim in claims:
            try:
                self._prepare(context, claim.arq, claim.deployable,
                              claim.handle)
            except Exception as e:
                LOG.warning('Binding ARQ %s failed: %s', claim.arq.uuid, e)
                failed.append(claim.arq.uuid)
            else:
                LOG.info('ARQ %s bound to %s', claim.arq.uuid,
                         claim.deployable.name)
                bound.append(claim.arq.uuid)
        changed = db_arqs.finish_binds(context, bound, failed)
        for uuid in changed:
            LOG.info('ARQ %s changed while its device was prepared; it is '
                     'left as it is', uuid)
        changed = set(changed)
        return (len(set(bound) - changed), len(set(failed) - changed))

    def _fail(self, context, uuid):
        try:
            db_arqs.fail_bind(context, uuid)
        except exception.ARQBadState as e:
            LOG.info('ARQ %s changed meanwhile: %s', uuid, e)

    def _prepare(self, context, arq, deployable, handle):
        """Program the FPGA or create the mdev the ARQ needs."""
        if _programs(arq):
            # The group as it is: program_for_bind reads its
            # "accel:bitstream_id" or "accel:function_id".
            self.inventory.program_for_bind(
                context, deployable.uuid, arq.group, agent_host(arq))
        if handle.attach_type == MDEV:
            address, mdev_type = report_checks.mdev_target(
                arq.attach_handle_info)
            self.agents.create_mdev(context, agent_host(arq), address,
                                    mdev_type, handle.uuid)

    def restore_mdevs(self, context, hostname):
        """Ask the agent of ``hostname`` to create again the mdevs of its
        bound ARQs that are missing: the kernel forgets mdevs at a reboot,
        and the instances that use them are started again. Called when the
        agent says hello; the agent skips the mdevs that exist."""
        mdevs = []
        for arq in db_arqs.bound_mdevs(context, hostname):
            try:
                address, mdev_type = report_checks.mdev_target(
                    arq.attach_handle_info)
            except exception.Invalid as e:
                LOG.warning('The mdev of ARQ %s is not restored: %s',
                            arq.uuid, e)
                continue
            mdevs.append({'pci_address': address, 'mdev_type': mdev_type,
                          'mdev_uuid': arq.attach_handle_uuid})
        if mdevs:
            self.agents.ensure_mdevs(context, hostname, mdevs)
        return len(mdevs)

    def remove_mdev(self, context, arq):
        if arq.attach_handle_type != MDEV or not arq.hostname:
            return
        try:
            address, mdev_type = report_checks.mdev_target(
                arq.attach_handle_info)
            self.agents.remove_mdev(context, agent_host(arq), address,
                                    mdev_type, arq.attach_handle_uuid)
        except Exception as e:
            LOG.warning('The mdev %s of ARQ %s could not be removed on %s: '
                        '%s', arq.attach_handle_uuid, arq.uuid,
                        agent_host(arq), e)

    def _unbind(self, context, uuid, project_id):
        arq = db_arqs.get(context, uuid, project_id)
        self.remove_mdev(context, arq)
        db_arqs.unbind(context, uuid, project_id)
        LOG.info('ARQ %s unbound', uuid)
        self.reports_due(context, [agent_host(arq)])

    def reports_due(self, context, hostnames, due=None):
        """After a release on ``hostnames``: ask the agents of those whose
        last report kept something in use for a full report, which removes
        what is free now (``due``: those, when already read)."""
        try:
            if due is None:
                due = db_hosts.awaiting_report(
                    context, [h for h in hostnames if h])
            for hostname in due:
                LOG.info('Asking host %s for its report again: something '
                         'it no longer reports may be free now', hostname)
                self.agents.say_hello(context, hostname)
        except Exception:
            LOG.exception('Cannot ask hosts %s for their reports', hostnames)

    def delete(self, context, arq_uuids=None, instance_uuid=None,
               project_id=None):
        # The hosts to ask for a report are read in the delete's
        # transaction; they are asked once the mdevs are removed.
        deleted, due = db_arqs.delete(
            context, uuids=arq_uuids, instance_uuid=instance_uuid,
            project_id=project_id, hosts_due=db_hosts.awaiting_report)
        for arq in deleted:
            self.remove_mdev(context, arq)
        LOG.info('Deleted %d ARQs', len(deleted))
        self.reports_due(context, sorted({agent_host(arq) for arq in deleted
                                          if agent_host(arq)}), due)

    def recover(self, context):
        """Fail the binds this conductor left unfinished, tell Nova."""
        self._fail_all(context, db_arqs.stale_binds(
            context, conductor=self.conf.host))
        self.events.send_pending()

    def check(self, context=None):
        """Periodic: binds left by any conductor too long ago fail; Nova
        gets the events it has not had."""
        context = context or cyborg_context.get_admin_context()
        self._fail_all(context, db_arqs.stale_binds(
            context, started_before=timeutils.utcnow() - BIND_TIMEOUT))
        self.events.send_pending()

    def _fail_all(self, context, uuids):
        for uuid in uuids:
            LOG.warning('ARQ %s was left in %s by a stopped conductor; it '
                        'failed', uuid, states.BIND_STARTED)
            self._fail(context, uuid)


def _resolved(binds, failed):
    """{instance: {arq uuid: state}} of ``binds`` committed with none
    left BindStarted, those ``failed`` BindFailed, the others Bound."""
    arqs_of = {}
    for uuid, values in binds.items():
        arqs_of.setdefault(values['instance_uuid'], {})[uuid] = (
            states.BIND_FAILED if uuid in failed else states.BOUND)
    return arqs_of


def agent_host(arq):
    """The RPC server of the agent of ``arq``'s device: its
    ``[DEFAULT] host``, which need not be the name Nova bound the ARQ on
    (``hostname``); that name while the ARQ has no device."""
    return arq.agent_host or arq.hostname


def _programs(arq):
    """Whether the ARQ's device profile group asks for an FPGA image."""
    wanted = profile_groups.accel_properties(arq.group)
    return any(wanted.get(key) for key in PROGRAM_KEYS)


def _ready(arq, handle):
    """Whether a bind is done once its attach handle is claimed: nothing
    to program or create on the host first."""
    return not _programs(arq) and handle.attach_type != MDEV
