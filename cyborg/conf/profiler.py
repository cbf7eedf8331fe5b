"""Options of the [profiler] group: osprofiler's own.

They are osprofiler's options (``[profiler]``, ``[profiler_otlp]``,
``[profiler_jaeger]``), registered and listed by osprofiler (the
``osprofiler`` namespace of the sample file), as Nova, Placement and
Ironic register them. cyborg changes three defaults: spans go to an
OpenTelemetry collector on this machine (OTLP over HTTP on its standard
port), not over the message bus (osprofiler's ``messaging://``), so no
statement or request detail travels through RabbitMQ; and a traced
request shows its SQL statements and its HTTP requests (to Placement,
Nova, Glance), which osprofiler leaves out by default: they are most of
what a cyborg request does. See the tracing page of the admin guide
(cyborg.common.profiler does the wiring).
"""

from oslo_config import cfg
from osprofiler import opts as profiler_opts

#: Where spans go by default: osprofiler's OpenTelemetry driver to a
#: collector on this machine (OTLP/HTTP, port 4318).
DEFAULT_CONNECTION = 'otlp://127.0.0.1:4318'


def register_opts(conf):
    profiler_opts.set_defaults(conf)
    # On the option objects, so the sample file shows our default too.
    for group, opts in profiler_opts.list_opts():
        if getattr(group, 'name', group) == 'profiler':
            cfg.set_defaults(opts, connection_string=DEFAULT_CONNECTION,
                             trace_sqlalchemy=True, trace_requests=True)


def list_opts():
    """None of cyborg's: osprofiler lists its options (namespace
    ``osprofiler``)."""
    return {}
