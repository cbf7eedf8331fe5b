"""The all-in-one: API, conductor, agent and an embedded Placement in one
process, on one port, with SQLite and in-process messaging."""

import os
import uuid

from oslo_log import log as logging
from oslo_service import service

from cyborg.agent import manager as agent_manager
from cyborg.aio import placement as aio_placement
from cyborg.api import app as api_app
from cyborg.api import server as api_server
from cyborg.common.clients import placement as placement_client
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.common import service as cyborg_service
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conf import aio as conf_aio
from cyborg.db import api as db_api
from cyborg.db import migration

LOG = logging.getLogger(__name__)


def configure(conf, bind_host, port, state_dir, sysfs_root=None):
    """Defaults of the all-in-one. A config file still wins over them,
    except for the address, which the command line gives."""
    os.makedirs(state_dir, exist_ok=True)
    rpc.register_opts(conf)
    conf.set_default('transport_url', 'local:/')
    conf.set_default('state_path', state_dir)
    conf.set_default('connection', 'sqlite:///%s' % os.path.join(
        state_dir, 'cyborg.sqlite'), group='database')
    conf.set_default('auth_strategy', 'noauth')
    conf.set_default('resource_provider_name', conf.host, group='agent')
    conf.set_default('key_dir', os.path.join(state_dir, 'keys'),
                     group='security')
    conf.set_override('host_ip', bind_host, group='api')
    conf.set_override('port', port, group='api')
    if sysfs_root:
        conf.set_override('sysfs_root', sysfs_root, group='agent')


def _use_embedded_placement(conf, port):
    """Point [placement] at the embedded service unless configured."""
    if conf.placement.auth_type:
        return
    from keystoneauth1 import loading as ks_loading
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('admin_token'),
                       group='placement')
    conf.set_override('auth_type', 'admin_token', group='placement')
    conf.set_override('endpoint', 'http://127.0.0.1:%d%s' % (
        port, aio_placement.PREFIX), group='placement')
    conf.set_override('token', 'admin', group='placement')


def compute_node_uuid(name):
    """A stable uuid for a compute node provider cyborg creates itself."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, 'compute-node.' + name))


def nova_configured(conf):
    """Whether cyborg was told how to reach a Nova."""
    return bool(conf.nova.auth_type or conf.nova.endpoint_override)


def creates_compute_node(conf):
    """Whether the all-in-one creates the compute node provider itself
    (``[aio] compute_node_provider``): not when a Nova is there, whose
    nova-compute must create it, with its own uuid, or never report its
    VCPU, memory and disk."""
    who = conf.aio.compute_node_provider
    if who == conf_aio.AUTO:
        who = conf_aio.NOVA if nova_configured(conf) else conf_aio.CYBORG
    return who == conf_aio.CYBORG


def ensure_compute_node(conf):
    """Without Nova nobody else creates the compute node provider. With
    Nova, None: the conductor finds Nova's provider once nova-compute has
    made it, and hangs the accelerators under it then (a host whose sync
    found no compute node is retried every [conductor]
    placement_retry_interval seconds)."""
    name = conf.agent.resource_provider_name
    if not creates_compute_node(conf):
        LOG.info('The compute node resource provider %s is left to Nova; '
                 'accelerators are offered in Placement once it exists',
                 name)
        return None
    client = placement_client.connect(conf)
    provider = placement_client.find_provider(client, name)
    if provider is None:
        provider = placement_client.create_provider(
            client, name, uuid=compute_node_uuid(name))
        LOG.info('Created compute node resource provider %s (%s)', name,
                 provider['uuid'])
    return provider


def ensure_keys(conf):
    """The all-in-one's RPC keys (the API's and its host's), made in
    [security] key_dir at the first start."""
    for identity in (keys.API, keys.host_identity(conf.host)):
        path, created = keys.create(conf.security.key_dir, identity)
        if created:
            LOG.info('Created the RPC key %s', path)


class AllInOne(service.Service):

    def __init__(self, conf, listener=None):
        super().__init__()
        self.conf = conf
        #: The socket listening on [api] host_ip and port already (None:
        #: the server makes its own).
        self.listener = listener
        self.server = None
        self.parts = []

    def start(self):
        super().start()
        conf = self.conf
        db_api.configure(conf)
        migration.upgrade('head')
        ensure_keys(conf)
        # Every part in one process; its transport keeps to the process.
        rpc.init(conf, identity=keys.CONDUCTOR)
        conductor = conductor_manager.ConductorManager(conf.host, conf)
        app = aio_placement.mount(
            api_app.setup_app(
                conf, conductor_api=conductor_rpcapi.LocalConductorAPI(
                    conductor)),
            aio_placement.build_app(conf.state_path))
        self.server = api_server.WSGIServer(
            app, conf.api.host_ip, conf.api.port,
            conf.api.threads_per_worker, listener=self.listener,
            name='cyborg-aio')
        self.server.start()
        _use_embedded_placement(conf, self.server.port)
        ensure_compute_node(conf)
        self._start_part(conductor, rpc.CONDUCTOR_TOPIC)
        self._start_part(agent_manager.AgentManager(conf.host, conf),
                         rpc.AGENT_TOPIC)
        LOG.info('cyborg all-in-one ready on http://%s:%s/ (Placement under '
                 '%s)', conf.api.host_ip, self.server.port,
                 aio_placement.PREFIX)

    def _start_part(self, manager, topic):
        part = cyborg_service.RPCService(self.conf.host, topic, manager,
                                         conf=self.conf)
        part.start()
        self.parts.append(part)

    def stop(self, graceful=True):
        for part in reversed(self.parts):
            part.stop()
        self.parts = []
        if self.server is not None:
            self.server.stop()
        rpc.cleanup()
        super().stop(graceful=graceful)
