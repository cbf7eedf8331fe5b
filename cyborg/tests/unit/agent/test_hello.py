"""What the agent says in its hello: the name of its compute node
provider, and to a conductor of the previous release a hello it knows."""

import logging
import os
import socket

import fixtures
import oslo_messaging as messaging
from oslo_versionedobjects import exception as ovo_exception

from cyborg.agent import manager as agent_manager
from cyborg.common import exception
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import conductor_versions


class HelloConductor(conductor_versions.RPCVersions):
    """The conductor's ``agent_hello``; with ``supported``, one of an
    older release that knows that AgentHello version only and refuses
    a newer one as oslo.versionedobjects does (a RemoteError, since the
    exception is not one of cyborg's)."""

    def __init__(self, supported=None, error=None):
        self.supported = supported
        self.error = error
        self.tried = []
        self.hellos = []

    def agent_hello(self, context, hello, timeout=None):
        primitive = (hello if isinstance(hello, dict)
                     else hello.obj_to_primitive())
        version = primitive['cyborg_object.version']
        self.tried.append(version)
        if self.error is not None:
            raise self.error
        if self.supported and version != self.supported:
            raise messaging.RemoteError(
                'IncompatibleObjectVersion',
                str(ovo_exception.IncompatibleObjectVersion(
                    objname='AgentHello', objver=version,
                    supported=self.supported)))
        self.hellos.append(primitive['cyborg_object.data'])
        return host_obj.Host(hostname=primitive['cyborg_object.data'][
            'hostname'], status='up', report_generation=0)


class HelloTest(base.TestCase):

    def setUp(self):
        super().setUp()
        state_dir = self.useFixture(fixtures.TempDir()).path
        self.flags(state_path=state_dir)
        self.flags(enabled_drivers=[], group='agent')

    def agent(self, conductor, on_refused=None):
        agent = agent_manager.AgentManager('cmp-1', self.conf,
                                           on_refused=on_refused)
        agent.reporter._conductor = conductor
        return agent

    def test_hello_names_the_compute_node_provider(self):
        self.flags(resource_provider_name='cmp-1.example.org', group='agent')
        conductor = HelloConductor()
        agent = self.agent(conductor)
        self.assertTrue(agent.reporter.hello(None))
        self.assertEqual(['1.3'], conductor.tried)
        [hello] = conductor.hellos
        self.assertEqual(('cmp-1', 'cmp-1.example.org'),
                         (hello['hostname'], hello['resource_provider_name']))
        self.assertTrue(agent.reporter.registered)

    def test_an_empty_name_means_the_hostname(self):
        self.flags(resource_provider_name='', group='agent')
        conductor = HelloConductor()
        self.assertTrue(self.agent(conductor).reporter.hello(None))
        self.assertIsNone(conductor.hellos[0]['resource_provider_name'])

    def test_older_conductor_gets_the_hello_it_knows(self):
        self.flags(resource_provider_name='cmp-1.example.org', group='agent')
        conductor = HelloConductor(supported='1.0')
        agent = self.agent(conductor)
        self.assertTrue(agent.reporter.hello(None))
        self.assertEqual(['1.3', '1.0'], conductor.tried)
        [hello] = conductor.hellos
        self.assertEqual('cmp-1', hello['hostname'])
        self.assertNotIn('resource_provider_name', hello)
        self.assertTrue(agent.reporter.registered)

    def test_other_remote_errors_are_not_retried(self):
        conductor = HelloConductor(error=messaging.RemoteError(
            'ValueError', 'something else'))
        agent = self.agent(conductor)
        self.assertFalse(agent.reporter.hello(None))
        self.assertEqual(['1.3'], conductor.tried)
        self.assertFalse(agent.reporter.registered)

    def test_the_hello_says_who_the_agent_is(self):
        conductor = HelloConductor()
        agent = self.agent(conductor)
        agent.reporter.hello(None)
        [hello] = conductor.hellos
        self.assertEqual(agent.reporter.agent_id, hello['agent_id'])
        seat, pid, _random = hello['agent_id'].rsplit('/', 2)
        self.assertEqual(str(os.getpid()), pid)
        self.assertEqual(socket.gethostname() + ':'
                         + os.path.abspath(self.conf.agent.state_file), seat)

    def test_refused_as_a_second_agent_it_says_so_once_and_stops(self):
        logs = self.useFixture(fixtures.FakeLogger(
            name='cyborg.agent.reporter', level=logging.WARNING))
        error = exception.AgentConflict(
            host='cmp-1', holder='node-a/1/aaaaaaaaaaaa', seconds=3,
            agent='node-b/2/bbbbbbbbbbbb')
        stops = []
        agent = self.agent(HelloConductor(error=error),
                           on_refused=lambda: stops.append(1))
        self.assertFalse(agent.reporter.hello(None))
        self.assertFalse(agent.reporter.hello(None))
        self.assertFalse(agent.reporter.registered)
        self.assertEqual([1], stops)
        self.assertEqual(['The conductor refused this agent: %s' % error],
                         logs.output.splitlines())
        self.assertEqual(str(error), agent.reporter.refused)
