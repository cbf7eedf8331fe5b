"""The ARQ lifecycle: create, bind, unbind, delete and recovery.

A bind is persisted at every step: all ARQs of the request move to
BindStarted together (or none does: a second bind of the same ARQ gets
409), each claims a free attach handle of the deployable behind the
provider Nova picked, the device is prepared (FPGA programmed or mdev
created) and the ARQ moves to Bound, or to BindFailed with its handle
released. Then Nova gets one event per ARQ of the instance, and the ARQs
remember that it did. A conductor that stops midway leaves ARQs in
BindStarted with its name on them: on start it fails those it owns, and a
periodic task fails any left by others for too long, and sends Nova the
events it has not had yet.
"""

import datetime

from oslo_log import log as logging
from oslo_utils import timeutils

from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.common.clients import nova
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import profile_groups
from cyborg.common import states
from cyborg.conductor import inventory
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import hosts as db_hosts

LOG = logging.getLogger(__name__)

MDEV = 'MDEV'
PROGRAM_KEYS = ('bitstream_id', 'function_id')
# A bind not finished after this long was left by a conductor that died.
BIND_TIMEOUT = datetime.timedelta(seconds=120)
PERIODIC_INTERVAL = 30


class Binding:

    def __init__(self, conf):
        self.conf = conf
        self._agents = None
        self._inventory = None

    @property
    def agents(self):
        if self._agents is None:
            self._agents = agent_rpcapi.AgentAPI()
        return self._agents

    @property
    def inventory(self):
        if self._inventory is None:
            self._inventory = inventory.Inventory(self.conf)
        return self._inventory

    def periodic_tasks(self):
        return [(PERIODIC_INTERVAL, self.check)]

    def create(self, context, device_profile_name, project_id):
        uuids = db_arqs.create(context, device_profile_name, project_id)
        LOG.info('Created %d ARQs for device profile %s', len(uuids),
                 device_profile_name)
        return uuids

    def apply_patch(self, context, patch, project_id):
        """Unbind the ARQs mapped to None, bind the others."""
        for uuid in [u for u, values in patch.items() if values is None]:
            self._unbind(context, uuid, project_id)
        binds = {u: values for u, values in patch.items()
                 if values is not None}
        if not binds:
            return
        db_arqs.start_binds(context, binds, project_id, self.conf.host)
        for uuid in binds:
            self._bind(context, uuid)
        self.notify(context)

    def _bind(self, context, uuid):
        try:
            deployable, handle = db_arqs.claim_handle(context, uuid)
            self._prepare(context, db_arqs.get(context, uuid), deployable,
                          handle)
            db_arqs.finish_bind(context, uuid)
            LOG.info('ARQ %s bound to %s', uuid, deployable.name)
        except Exception as e:
            LOG.warning('Binding ARQ %s failed: %s', uuid, e)
            self._fail(context, uuid)

    def _fail(self, context, uuid):
        try:
            db_arqs.fail_bind(context, uuid)
        except exception.ARQBadState as e:
            LOG.info('ARQ %s changed meanwhile: %s', uuid, e)

    def _prepare(self, context, arq, deployable, handle):
        """Program the FPGA or create the mdev the ARQ needs."""
        wanted = profile_groups.accel_properties(arq.group)
        if any(wanted.get(key) for key in PROGRAM_KEYS):
            self.inventory.program_for_bind(context, deployable.uuid,
                                            wanted, arq.hostname)
        if handle.attach_type == MDEV:
            info = arq.attach_handle_info
            self.agents.create_mdev(context, arq.hostname, _pci(info),
                                    info.get('asked_type'), handle.uuid)

    def restore_mdevs(self, context, hostname):
        """Ask the agent of ``hostname`` to create again the mdevs of its
        bound ARQs that are missing: the kernel forgets mdevs at a reboot,
        and the instances that use them are started again. Called when the
        agent says hello; the agent skips the mdevs that exist."""
        mdevs = [{'pci_address': _pci(arq.attach_handle_info),
                  'mdev_type': arq.attach_handle_info.get('asked_type'),
                  'mdev_uuid': arq.attach_handle_uuid}
                 for arq in db_arqs.bound_mdevs(context, hostname)]
        if mdevs:
            self.agents.ensure_mdevs(context, hostname, mdevs)
        return len(mdevs)

    def _remove_mdev(self, context, arq):
        if arq.attach_handle_type != MDEV or not arq.hostname:
            return
        info = arq.attach_handle_info
        try:
            self.agents.remove_mdev(context, arq.hostname, _pci(info),
                                    info.get('asked_type'),
                                    arq.attach_handle_uuid)
        except Exception as e:
            LOG.warning('The mdev %s of ARQ %s could not be removed on %s: '
                        '%s', arq.attach_handle_uuid, arq.uuid,
                        arq.hostname, e)

    def _unbind(self, context, uuid, project_id):
        arq = db_arqs.get(context, uuid, project_id)
        self._remove_mdev(context, arq)
        db_arqs.unbind(context, uuid, project_id)
        LOG.info('ARQ %s unbound', uuid)
        self.reports_due(context, [arq.hostname])

    def reports_due(self, context, hostnames):
        """After a release on ``hostnames``: ask the agents of those whose
        last report kept something in use for a full report, which removes
        what is free now."""
        try:
            for hostname in db_hosts.awaiting_report(
                    context, [h for h in hostnames if h]):
                LOG.info('Asking host %s for its report again: something '
                         'it no longer reports may be free now', hostname)
                self.agents.say_hello(context, hostname)
        except Exception:
            LOG.exception('Cannot ask hosts %s for their reports', hostnames)

    def delete(self, context, arq_uuids=None, instance_uuid=None,
               project_id=None):
        deleted = db_arqs.delete(context, uuids=arq_uuids,
                                 instance_uuid=instance_uuid,
                                 project_id=project_id)
        for arq in deleted:
            self._remove_mdev(context, arq)
        LOG.info('Deleted %d ARQs', len(deleted))
        self.reports_due(context, sorted({arq.hostname for arq in deleted
                                          if arq.hostname}))

    def notify(self, context):
        """Send Nova the events of every instance whose ARQs are all
        resolved and not yet reported."""
        for instance, arqs in db_arqs.unnotified_instances(context).items():
            event_list = nova.events(instance, {
                arq.uuid: states.nova_status(arq.state) for arq in arqs})
            if nova.send_events(self.conf, event_list):
                db_arqs.mark_notified(context, [arq.uuid for arq in arqs])

    def recover(self, context):
        """Fail the binds this conductor left unfinished, tell Nova."""
        self._fail_all(context, db_arqs.stale_binds(
            context, conductor=self.conf.host))
        self.notify(context)

    def check(self, context=None):
        """Periodic: binds left by any conductor too long ago fail; Nova
        gets the events it has not had."""
        context = context or cyborg_context.get_admin_context()
        self._fail_all(context, db_arqs.stale_binds(
            context, started_before=timeutils.utcnow() - BIND_TIMEOUT))
        self.notify(context)

    def _fail_all(self, context, uuids):
        for uuid in uuids:
            LOG.warning('ARQ %s was left in %s by a stopped conductor; it '
                        'failed', uuid, states.BIND_STARTED)
            self._fail(context, uuid)


def _pci(info):
    return '%s:%s:%s.%s' % (info.get('domain'), info.get('bus'),
                            info.get('device'), info.get('function'))
