"""Nova's ``accelerator-request-bound`` events, off the request path.

Once a bind has committed, the conductor posts its instance here and the
bind's RPC call returns: Nova learns the outcome from the API (``GET
?instance=&bind_state=resolved``) or from the event, whichever comes
first. A thread of the coalescer then sends the events of every instance
posted meanwhile in ONE request, through the conductor's one Nova client,
and marks the ARQs whose events Nova took in one transaction.

The mark (``nova_notified``) is what makes this safe: an event is
"sent" only once Nova took it and the mark committed. Events left
unmarked by a conductor that stopped, or refused by a Nova that was
down, are sent again at the conductor's start (``Binding.recover``) and
by every conductor's periodic check (``Binding.check``). Nova ignores an
event nobody waits for, so one sent twice does no harm; one never sent
would make nova-compute wait out its timeout.
"""

from oslo_log import log as logging

from cyborg.common.clients import nova
from cyborg.common import coalesce
from cyborg.common import context as cyborg_context
from cyborg.common import states
from cyborg.db import arq_instances

LOG = logging.getLogger(__name__)

#: Instances posted while a request to Nova is out, sent together next.
MAX_BATCH = 64
#: Instances per request when every pending one is sent.
PER_REQUEST = 64
#: An item that stands for every instance Nova was not told of.
EVERY_PENDING = None


class Known(tuple):
    """An item whose ARQs' states the poster knows: (instance, {arq
    uuid: state})."""

    def __new__(cls, instance, arqs):
        return super().__new__(cls, (instance, arqs))


class NovaEvents:

    def __init__(self, conf):
        self.conf = conf
        self.client = nova.Client(conf)
        self.batches = coalesce.Coalescer(self._send_batch, MAX_BATCH)

    def post(self, instances):
        """Send the events of ``instances`` soon, without waiting; their
        ARQs are read when they are sent."""
        for instance in sorted(instances):
            self.batches.post(instance)

    def post_known(self, arqs_of):
        """Send soon the events of ``arqs_of`` ({instance: {arq uuid:
        state}}, every ARQ of each instance, all resolved), as a bind
        that committed them knows them: nothing is read again. As with
        a read, an ARQ may change before Nova gets its event (Nova
        ignores an event nobody waits for); only what Nova took is
        marked."""
        for instance in sorted(arqs_of):
            self.batches.post(Known(instance, dict(arqs_of[instance])))

    def send_pending(self):
        """Send every event Nova has not taken yet, now; returns when
        that was tried."""
        self.batches.submit(EVERY_PENDING)

    def wait_idle(self, timeout=None):
        """Whether what was posted so far has been tried, waiting up to
        ``timeout`` seconds for it."""
        return self.batches.wait_idle(timeout)

    def _send_batch(self, instances):
        context = cyborg_context.get_admin_context()
        known = {item[0]: item[1] for item in instances
                 if isinstance(item, Known)}
        unknown = [item for item in instances if not isinstance(item, Known)]
        pending = {}
        if unknown:
            wanted = (None if EVERY_PENDING in unknown else set(unknown))
            # What is read wins over what was posted: it is newer.
            pending = arq_instances.unnotified(context, wanted)
            known = {instance: arqs for instance, arqs in known.items()
                     if wanted is not None and instance not in wanted}
        for instance, arqs in known.items():
            pending.setdefault(instance, arqs)
        ordered = sorted(pending)
        for start in range(0, len(ordered), PER_REQUEST):
            self._send(context, {instance: pending[instance]
                                 for instance in ordered[start:
                                                         start + PER_REQUEST]})
        return [None] * len(instances)

    def _send(self, context, arqs_of):
        """One request with the events of ``arqs_of`` ({instance: {arq
        uuid: state}}); the ARQs whose events Nova took are marked."""
        event_list = []
        for instance, arqs in arqs_of.items():
            event_list += nova.events(instance, {
                uuid: states.nova_status(state)
                for uuid, state in arqs.items()})
        delivered = self.client.send_events(event_list)
        if delivered:
            arq_instances.mark_notified(context, sorted(delivered))
            LOG.debug('Nova took %d %s events of %d instances',
                      len(delivered), nova.EVENT, len(arqs_of))
