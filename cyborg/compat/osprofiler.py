"""osprofiler: the OpenTelemetry driver's open spans, one stack per thread.

osprofiler's ``otlp`` driver (4.3 and 4.4) keeps the spans it has opened
in one deque per process (``OTLP.spans``) and ends the last one opened by
any thread. A daemon serves several traced requests at once, each in a
thread of its own, so one request would end another's span. The
driver's ``spans`` attribute is no documented interface; :func:`per_thread`
gives the driver a stack per thread in its place.
"""

import collections
import threading

DISTRIBUTION = 'osprofiler'
PRIVATE_NAMES = ()
INTERNAL_NAMES = ('spans',)


class ThreadSpans(threading.local):
    """The driver's open spans: the stack of the calling thread."""

    def __init__(self):
        self.stack = []

    def append(self, span):
        self.stack.append(span)

    def pop(self):
        return self.stack.pop()


def per_thread(notify):
    """The driver of ``notify`` (osprofiler's notifier, a bound method)
    keeps its open spans per thread, if it is the driver that keeps them
    in a deque; any other driver is left as it is."""
    driver = getattr(notify, '__self__', None)
    if isinstance(getattr(driver, 'spans', None), collections.deque):
        driver.spans = ThreadSpans()
