"""RPC APIs: client and server agree on versions and methods."""

import inspect

from cyborg.agent import admin as agent_admin
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests import base

# (client, the endpoint objects its server serves, client module)
PAIRS = [
    (conductor_rpcapi.ConductorAPI, [conductor_manager.ConductorManager],
     conductor_rpcapi),
    (agent_rpcapi.AgentAPI,
     [agent_manager.AgentManager, agent_admin.AdminEndpoints], agent_rpcapi),
]

# Manager methods that are not RPC endpoints.
# Services' hooks, and the client's own bookkeeping of the version it may
# send (no message).
NOT_ENDPOINTS = {'periodic_tasks', 'init_host', 'del_host', 'target',
                 'can_send_version', 'cap_version'}


def _public_methods(cls):
    return {name for name, _ in inspect.getmembers(cls)
            if not name.startswith('_') and callable(getattr(cls, name))
            and name not in NOT_ENDPOINTS}


class RPCAPIConsistencyTest(base.TestCase):

    def test_versions_agree(self):
        for client, servers, _module in PAIRS:
            for server in servers:
                self.assertEqual(client.RPC_API_VERSION,
                                 server.RPC_API_VERSION, server.__name__)
                self.assertEqual(server.RPC_API_VERSION,
                                 server.target.version, server.__name__)

    def test_version_history_documents_current_version(self):
        for client, _server, module in PAIRS:
            self.assertIn('* %s - ' % client.RPC_API_VERSION,
                          module.__doc__, module.__name__)

    def test_every_client_method_has_an_endpoint(self):
        for client, servers, _module in PAIRS:
            served = [_public_methods(server) for server in servers]
            self.assertEqual(_public_methods(client), set().union(*served),
                             client.__name__)
            # Each once: the server would call the first object's only.
            self.assertEqual(sum(map(len, served)),
                             len(set().union(*served)), client.__name__)

    def test_client_methods_ask_for_a_version(self):
        for client, _server, _module in PAIRS:
            for name in _public_methods(client):
                source = inspect.getsource(getattr(client, name))
                self.assertIn("version='", source,
                              '%s.%s must ask for the minimum RPC version '
                              'it needs' % (client.__name__, name))


class _RecordingClient:
    """Records what a client method prepares and calls."""

    def __init__(self, cap=(1, 4)):
        self.prepared = []
        self.cast_calls = []
        self.cap = cap

    def prepare(self, **kwargs):
        self.prepared.append(kwargs)
        return self

    def call(self, context, method, **kwargs):
        return method

    def cast(self, context, method, **kwargs):
        self.cast_calls.append((method, kwargs))

    def can_send_version(self, version):
        return tuple(map(int, version.split('.'))) <= self.cap


class TimeoutTest(base.TestCase):

    def test_programming_waits_for_slow_flashes(self):
        api = agent_rpcapi.AgentAPI.__new__(agent_rpcapi.AgentAPI)
        api.client = _RecordingClient()
        api.fpga_program(None, 'host-1', {}, 'image', 'XILINX')
        self.assertEqual([{'server': 'host-1', 'version': '1.1',
                           'timeout': agent_rpcapi.PROGRAM_TIMEOUT}],
                         api.client.prepared)
        self.assertGreaterEqual(agent_rpcapi.PROGRAM_TIMEOUT, 30 * 60)

    def test_mdevs_to_restore_only_to_agents_that_know_the_call(self):
        mdevs = [{'pci_address': '0000:3b:00.0', 'mdev_type': 'nvidia-222',
                  'mdev_uuid': 'u1'}]
        api = agent_rpcapi.AgentAPI.__new__(agent_rpcapi.AgentAPI)
        api.client = _RecordingClient()
        api.ensure_mdevs(None, 'host-1', mdevs)
        self.assertEqual([{'server': 'host-1', 'version': '1.4'}],
                         api.client.prepared)
        self.assertEqual([('ensure_mdevs', {'mdevs': mdevs})],
                         api.client.cast_calls)
        api.client = _RecordingClient(cap=(1, 3))
        api.ensure_mdevs(None, 'host-1', mdevs)
        self.assertEqual([], api.client.cast_calls)


class ReportDataTest(base.TestCase):

    def test_a_sequence_needs_1_5_and_none_stays_at_1_1(self):
        api = conductor_rpcapi.ConductorAPI.__new__(
            conductor_rpcapi.ConductorAPI)
        api.client = _RecordingClient()
        api.report_data(None, 'host-1', [], 'hash', timeout=20)
        api.report_data(None, 'host-1', [], 'hash', report_seq=7,
                        timeout=20)
        self.assertEqual([{'version': '1.1', 'timeout': 20},
                          {'version': '1.5', 'timeout': 20}],
                         api.client.prepared)

    def test_hardware_needs_1_6_and_goes_with_a_sequence(self):
        api = conductor_rpcapi.ConductorAPI.__new__(
            conductor_rpcapi.ConductorAPI)
        api.client = _RecordingClient()
        api.report_data(None, 'host-1', [], 'hash', report_seq=7,
                        hardware=[], timeout=20)
        # Without a sequence the conductor is older than 1.5: no hardware.
        api.report_data(None, 'host-1', [], 'hash', hardware=[],
                        timeout=20)
        self.assertEqual([{'version': '1.6', 'timeout': 20},
                          {'version': '1.1', 'timeout': 20}],
                         api.client.prepared)
