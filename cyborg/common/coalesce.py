"""Group commit: work that arrives together is done together.

A :class:`Coalescer` wraps a function of a *batch* of items. Threads
submit one item each and block. One batch runs at a time: while it runs,
new items wait, and when it ends the items that arrived meanwhile (up to
``max_batch``) form the next batch, run by one of their own threads. So
an idle system runs each item alone, without delay, and a busy one does
one batch of work where it would have done many; the conductor uses it to
read and write the reports of many agents in one transaction.

Work nobody waits for is *posted* instead: it joins the next batch the
same way, and when no submitter is there to run that batch, a thread of
the coalescer's own runs batches until nothing is pending, then ends. The
conductor posts the Nova events of the binds it commits, so the bind's
caller does not wait for Nova, and binds that finish together are told
in one request.
"""

import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class _Slot:
    __slots__ = ('item', 'done', 'outcome', 'posted')

    def __init__(self, item, posted=False):
        self.item = item
        self.done = False
        self.outcome = None
        self.posted = posted


class Coalescer:

    def __init__(self, apply_batch, max_batch=64):
        """``apply_batch(items)`` returns one outcome per item, in order;
        an outcome that is an exception is raised to that item's
        submitter. If ``apply_batch`` itself raises, every submitter of
        the batch gets the exception."""
        self._apply_batch = apply_batch
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._pending = []
        self._busy = False
        # The thread running posted items, while there is one.
        self._drainer = None
        #: Batches run and items in them, for tests and benchmarks.
        self.batches = 0
        self.items = 0

    def submit(self, item):
        """The outcome of ``item``, once the batch it joined has run."""
        slot = _Slot(item)
        with self._cond:
            self._pending.append(slot)
        while True:
            with self._cond:
                while self._busy and not slot.done:
                    self._cond.wait()
                if slot.done:
                    break
                # Our turn to run a batch: the oldest waiting items,
                # which include ours unless more than max_batch wait.
                batch = self._take()
            self._run(batch)
        if isinstance(slot.outcome, BaseException):
            raise slot.outcome
        return slot.outcome

    def post(self, item):
        """Queue ``item`` and return at once: it joins the next batch,
        run by a waiting submitter or else by the coalescer's own thread.
        Its outcome is dropped; an exception is logged."""
        with self._cond:
            self._pending.append(_Slot(item, posted=True))
            if self._drainer is None:
                self._drainer = threading.Thread(
                    target=self._drain, name='coalescer', daemon=True)
                self._drainer.start()

    def wait_idle(self, timeout=None):
        """Whether every item posted or submitted so far has run, waiting
        up to ``timeout`` seconds for it."""
        with self._cond:
            return self._cond.wait_for(
                lambda: not (self._busy or self._pending), timeout)

    def _take(self):
        """Start a batch: the oldest waiting items (up to max_batch)."""
        self._busy = True
        batch = self._pending[:self._max_batch]
        del self._pending[:self._max_batch]
        return batch

    def _drain(self):
        while True:
            with self._cond:
                while self._busy:
                    self._cond.wait()
                if not self._pending:
                    self._drainer = None
                    return
                batch = self._take()
            self._run(batch)

    def _run(self, batch):
        try:
            outcomes = list(self._apply_batch([s.item for s in batch]))
            if len(outcomes) != len(batch):
                outcomes = [RuntimeError('%d outcomes for %d items' % (
                    len(outcomes), len(batch)))] * len(batch)
        except BaseException as e:  # to every submitter, not lost here
            outcomes = [e] * len(batch)
        with self._cond:
            self.batches += 1
            self.items += len(batch)
            for slot, outcome in zip(batch, outcomes, strict=True):
                slot.outcome = outcome
                slot.done = True
                if slot.posted and isinstance(outcome, BaseException):
                    LOG.error('Posted %r failed: %s', slot.item, outcome,
                              exc_info=outcome)
            self._busy = False
            self._cond.notify_all()
