"""ARQs that outlive their server: Nova never deletes the ARQs of a
server deleted before it got a host (its local delete), so they would
stay Bound and hold their device for ever.

Every ``[conductor] stuck_arq_interval`` seconds a conductor takes up to
``stuck_arq_limit`` instances whose ARQs were bound more than
``stuck_arq_grace`` seconds ago and that Nova has not yet shown past
their build, marking them as asked about (so another conductor takes
others), and asks Nova's servers API about them, ``PER_REQUEST`` at a
time, with the ``[nova]`` user. Then, per instance:

* not listed (deleted, or never created): its ARQs are released as a
  DELETE of them would (attach handles freed, mdevs removed, hosts asked
  for a report), each with a log line and a ``cyborg.arq.released``
  notification;
* listed past its build (any status but ``BUILD`` or ``UNKNOWN``, which
  is a server in a cell that does not answer): confirmed, never asked
  about again, since Nova's own delete paths release its ARQs from then;
* listed building: asked about again at a later check.

When Nova cannot say (no credentials, an error, a timeout, a refusal, a
filter it ignored), nothing is released: the instances are asked about
again after an interval. The cost of a check follows the ARQs not yet
confirmed, not all ARQs, and is bounded by ``stuck_arq_limit``.
"""

import datetime

from oslo_log import log as logging
from oslo_utils import timeutils

from cyborg.common.clients import nova
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import notifications
from cyborg.db import arq_instances
from cyborg.objects import notification

LOG = logging.getLogger(__name__)

#: Instances per request to Nova.
PER_REQUEST = 20
#: Statuses of a server Nova may still be building or cannot show.
UNSETTLED = frozenset(['BUILD', 'UNKNOWN'])


def decide(asked, shown):
    """``(gone, confirmed)`` of the instances ``asked`` about, from Nova's
    ``{uuid: status}`` of those it listed: gone when not listed (or
    listed ``DELETED``), confirmed when listed past its build; the
    others are neither."""
    gone = sorted(u for u in asked
                  if u not in shown or shown[u] == nova.DELETED)
    confirmed = sorted(u for u in asked if u in shown
                       and shown[u] not in UNSETTLED | {nova.DELETED})
    return gone, confirmed


def payload(arq):
    return notification.ARQEventPayload(
        uuid=arq.uuid, state=arq.state, instance_uuid=arq.instance_uuid,
        hostname=arq.hostname, device_rp_uuid=arq.device_rp_uuid,
        device_profile_name=arq.device_profile_name,
        attach_handle_uuid=arq.attach_handle_uuid,
        project_id=arq.project_id)


class StuckARQs:

    def __init__(self, conf, binding, client=None):
        self.conf = conf
        #: The ARQ lifecycle, whose release steps a delete takes.
        self.binding = binding
        #: The conductor's one Nova client (the events' client).
        self.client = client or binding.events.client

    def periodic_tasks(self):
        interval = self.conf.conductor.stuck_arq_interval
        return [(interval, self.check)] if interval else []

    def check(self, context=None, now=None):
        """One check (as if at ``now``, for tests); returns the number of
        ARQs released."""
        if not nova.configured(self.conf):
            return 0
        context = context or cyborg_context.get_admin_context()
        options = self.conf.conductor
        now = now or timeutils.utcnow()
        instances = arq_instances.take_unconfirmed(
            context,
            bound_before=now - datetime.timedelta(
                seconds=options.stuck_arq_grace),
            checked_before=now - datetime.timedelta(
                seconds=max(options.stuck_arq_interval - 1, 0)),
            limit=options.stuck_arq_limit)
        released = 0
        for start in range(0, len(instances), PER_REQUEST):
            batch = instances[start:start + PER_REQUEST]
            try:
                shown = self.client.servers(batch)
            except exception.NovaUnavailable as e:
                LOG.warning('Cannot tell whether %d instances with ARQs '
                            'still exist; nothing is released, they are '
                            'asked about again at a later check: %s',
                            len(instances) - start, e)
                break
            gone, confirmed = decide(batch, shown)
            arq_instances.confirm_instances(context, confirmed)
            for instance in gone:
                released += self.release(context, instance)
        return released

    def release(self, context, instance):
        """Release the unconfirmed ARQs of ``instance``, which Nova no
        longer has; returns how many."""
        arqs = arq_instances.delete_unconfirmed(context, instance)
        for arq in arqs:
            LOG.warning('ARQ %s (%s, device provider %s on host %s) is '
                        'released: Nova no longer has its instance %s',
                        arq.uuid, arq.state, arq.device_rp_uuid,
                        arq.hostname, instance)
            self.binding.remove_mdev(context, arq)
            notifications.emit(context, 'arq.released', 'WARNING',
                               payload(arq))
        # The agents of the devices (Nova's name of a host may differ).
        self.binding.reports_due(context, sorted(
            {arq.agent_host for arq in arqs if arq.agent_host}))
        return len(arqs)
