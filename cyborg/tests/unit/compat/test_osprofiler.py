"""cyborg.compat.osprofiler on osprofiler's own OpenTelemetry driver: its
open spans kept per thread, so two requests traced at once each end
their own span; fails when the driver keeps its spans otherwise."""

import threading

from opentelemetry.sdk.trace import export
from opentelemetry.sdk.trace.export import in_memory_span_exporter
from opentelemetry.sdk.trace import TracerProvider
from oslo_utils import uuidutils
from osprofiler.drivers import otlp

from cyborg.compat import osprofiler as osprofiler_compat
from cyborg.tests import base


class ThreadSpansTest(base.TestCase):
    """osprofiler's OpenTelemetry driver, its spans kept per thread: two
    requests traced at once each end their own span."""

    def test_each_thread_ends_its_own_span(self):
        driver = otlp.OTLP('otlp://127.0.0.1:9', project='cyborg',
                           service='test', conf=self.conf)
        exporter = in_memory_span_exporter.InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(export.SimpleSpanProcessor(exporter))
        driver.tracer = provider.get_tracer(__name__)
        osprofiler_compat.per_thread(driver.notify)
        self.assertIsInstance(driver.spans, osprofiler_compat.ThreadSpans)

        def payload(name, trace_id):
            return {'name': name, 'base_id': base_id, 'parent_id': base_id,
                    'trace_id': trace_id, 'info': {'host': 'h'}}

        base_id = uuidutils.generate_uuid()
        a, b = uuidutils.generate_uuid(), uuidutils.generate_uuid()
        a_open, b_open = threading.Event(), threading.Event()

        def first():
            driver.notify(payload('one-start', a))
            a_open.set()
            b_open.wait(10)
            driver.notify(payload('one-stop', a))

        thread = threading.Thread(target=first)
        thread.start()
        a_open.wait(10)
        driver.notify(payload('two-start', b))
        b_open.set()
        thread.join(10)
        # Only one ended, in its thread, though two was opened after it.
        self.assertEqual(['one'],
                         [s.name for s in exporter.get_finished_spans()])
        driver.notify(payload('two-stop', b))
        self.assertEqual(['one', 'two'],
                         [s.name for s in exporter.get_finished_spans()])

    def test_another_driver_is_left_alone(self):
        class Other:
            spans = []

            def notify(self, payload):
                pass
        other = Other()
        osprofiler_compat.per_thread(other.notify)
        self.assertEqual([], other.spans)
        osprofiler_compat.per_thread(print)
