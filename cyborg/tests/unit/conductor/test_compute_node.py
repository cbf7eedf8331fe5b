"""Which compute node provider the conductor puts a host's accelerators
under: the one its agent names in its hello ([agent]
resource_provider_name), else the one named after the hostname."""

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.conductor import liveness
from cyborg.conductor import placement_service
from cyborg.conductor import placement_sync
from cyborg.db import hosts as db_hosts
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


class _Response:

    def __init__(self, providers):
        self.status_code = 200
        self._body = {'resource_providers': providers}

    def json(self):
        return self._body


class FakePlacement:
    """Answers ``GET /resource_providers?name=`` from ``names``."""

    def __init__(self, *names):
        self.providers = {name: {'uuid': 'uuid-of-' + name, 'name': name}
                          for name in names}
        self.asked = []

    def get(self, url, **kwargs):
        name = url.split('?name=', 1)[1]
        self.asked.append(name)
        provider = self.providers.get(name)
        return _Response([provider] if provider else [])


def hello(hostname, **kwargs):
    return host_obj.AgentHello(hostname=hostname, status='READY',
                               endpoint=hostname, version='1', drivers=[],
                               **kwargs)


class ComputeNodeTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        self.ctx = cyborg_context.get_admin_context()
        self.liveness = liveness.Liveness(self.conf)

    def names(self, hostname):
        return placement_sync.compute_node_names(self.ctx, hostname)

    def test_hello_records_the_name(self):
        self.liveness.hello(self.ctx, hello(
            'cmp-1', resource_provider_name='cmp-1.example.org'))
        self.assertEqual('cmp-1.example.org', db_hosts.resource_provider_name(
            self.ctx, 'cmp-1'))
        self.assertEqual(['cmp-1.example.org', 'cmp-1'], self.names('cmp-1'))

    def test_hello_without_the_name_means_the_hostname(self):
        # An agent of the previous release (AgentHello 1.0) after one
        # that gave a name: the hostname again.
        self.liveness.hello(self.ctx, hello(
            'cmp-1', resource_provider_name='cmp-1.example.org'))
        self.liveness.hello(self.ctx, hello('cmp-1'))
        self.assertIsNone(db_hosts.resource_provider_name(self.ctx, 'cmp-1'))
        self.assertEqual(['cmp-1'], self.names('cmp-1'))
        self.liveness.hello(self.ctx, hello('cmp-1',
                                            resource_provider_name=None))
        self.assertEqual(['cmp-1'], self.names('cmp-1'))

    def test_a_host_cannot_take_another_hosts_provider(self):
        self.liveness.hello(self.ctx, hello(
            'cmp-1', resource_provider_name='cmp-1.example.org'))
        self.liveness.hello(self.ctx, hello('cmp-2'))
        error = self.assertRaises(
            exception.Invalid, self.liveness.hello, self.ctx,
            hello('cmp-2', resource_provider_name='cmp-1'))
        self.assertIn("is host cmp-1's, not cmp-2's", str(error))
        self.assertEqual(['cmp-2'], self.names('cmp-2'))
        # Agents on one machine share its name as their default.
        for host in ('cmp-1', 'cmp-2'):
            self.liveness.hello(self.ctx, hello(
                host, resource_provider_name='machine.example.org'))
        # Its own names stay its own.
        self.liveness.hello(self.ctx, hello(
            'cmp-1', resource_provider_name='cmp-1.example.org'))
        self.liveness.hello(self.ctx, hello('cmp-1',
                                            resource_provider_name='cmp-1'))

    def test_names(self):
        self.liveness.hello(self.ctx, hello('cmp-2',
                                            resource_provider_name='cmp-2'))
        self.assertEqual(['cmp-2'], self.names('cmp-2'))
        # A host no agent registered: a provider name, for all we know.
        self.assertEqual(['cmp-3.example.org'],
                         self.names('cmp-3.example.org'))

    def test_first_name_placement_has_wins(self):
        names = ['cmp-1.example.org', 'cmp-1']
        both = FakePlacement('cmp-1.example.org', 'cmp-1')
        self.assertEqual('cmp-1.example.org', placement_sync.find_compute_node(
            both, names)['name'])
        self.assertEqual(['cmp-1.example.org'], both.asked)
        short = FakePlacement('cmp-1')
        self.assertEqual('cmp-1', placement_sync.find_compute_node(
            short, names)['name'])
        self.assertEqual(names, short.asked)
        self.assertIsNone(placement_sync.find_compute_node(
            FakePlacement('other'), names))

    def test_sync_without_a_compute_node_provider(self):
        self.liveness.hello(self.ctx, hello(
            'cmp-1', resource_provider_name='cmp-1.example.org'))
        sync = placement_service.PlacementService(
            self.conf, FakePlacement('cmp-2')).sync
        error = self.assertRaises(exception.PlacementError, sync.apply_tree,
                                  'cmp-1', [])
        self.assertEqual(404, error.kwargs['status'])
        self.assertIn('no compute node provider named cmp-1.example.org or '
                      'cmp-1', str(error))
