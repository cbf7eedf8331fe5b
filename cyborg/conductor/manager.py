"""The conductor's RPC endpoints. Workflows live in their own modules."""

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg.common import exception
from cyborg.conductor import liveness
from cyborg.conductor import reporting


LOG = logging.getLogger(__name__)


class ConductorManager:
    """Endpoints of topic ``cyborg-conductor``; see rpcapi for versions."""

    RPC_API_VERSION = '1.1'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, host, conf):
        self.host = host
        self.conf = conf
        self.liveness = liveness.Liveness(conf)
        self.reporting = reporting.Reporting(conf)

    def periodic_tasks(self):
        return [(self.conf.conductor.liveness_check_interval,
                 self.liveness.check_hosts)]

    @messaging.expected_exceptions(exception.Invalid)
    def agent_hello(self, context, hello):
        return self.liveness.hello(context, hello)

    def agent_heartbeat(self, context, hostname):
        self.liveness.heartbeat(context, hostname)

    @messaging.expected_exceptions(exception.Invalid, exception.NotFound)
    def report_data(self, context, hostname, devices, report_hash):
        return self.reporting.report(context, hostname, devices, report_hash)
