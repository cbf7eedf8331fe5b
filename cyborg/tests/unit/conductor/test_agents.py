"""The conductor's one way to its agents: one client per conductor, and
one translation of a failed agent call into the caller's error."""

import fixtures
import oslo_messaging as messaging

from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.common import exception
from cyborg.conductor import agents
from cyborg.conductor import manager as conductor_manager
from cyborg.tests import base


class Failed(Exception):
    """The caller's error in these tests."""


def _failed(reason):
    return Failed(reason)


class OneGatewayTest(base.TestCase):

    def test_every_workflow_uses_the_managers_gateway(self):
        manager = conductor_manager.ConductorManager('cond', self.conf)
        gateway = manager.agents
        self.assertIsInstance(gateway, agents.Agents)
        for user in (manager.devices, manager.liveness, manager.inventory,
                     manager.binding, manager.accelerators, manager.drivers):
            self.assertIs(gateway, user.agents, user)

    def test_the_client_is_built_once_on_first_use(self):
        built = []

        class API:
            def __init__(self):
                built.append(self)

            def say_hello(self, context, hostname):
                return 'hello %s' % hostname
        self.useFixture(fixtures.MockPatchObject(agent_rpcapi, 'AgentAPI',
                                                 API))
        gateway = agents.Agents()
        self.assertEqual([], built)
        self.assertEqual('hello h1', gateway.say_hello(None, 'h1'))
        self.assertEqual('hello h2', gateway.say_hello(None, 'h2'))
        self.assertEqual(1, len(built))
        self.assertRaises(AttributeError, getattr, gateway, '_client')


class FailuresTest(base.TestCase):

    def assert_becomes(self, reason, error):
        with self.assertRaises(Failed) as caught:
            with agents.failures(_failed):
                raise error
        self.assertEqual(reason, str(caught.exception))
        self.assertIs(error, caught.exception.__cause__)

    def test_no_answer(self):
        self.assert_becomes('the agent did not answer',
                            messaging.MessagingTimeout('30 seconds'))

    def test_an_exception_the_agent_cannot_send_as_itself(self):
        self.assert_becomes(
            'CalledProcessError: exit status 1',
            messaging.RemoteError('CalledProcessError', 'exit status 1'))

    def test_a_server_error_of_the_agent(self):
        error = exception.DriverOperationFailed(
            operation='Creating mdev m1', host='h1', reason='no space')
        self.assert_becomes(str(error), error)

    def test_a_built_in_exception_of_the_agent(self):
        self.assert_becomes('OSError: No space left on device',
                            OSError('No space left on device'))

    def test_a_client_error_of_the_agent_passes_as_itself(self):
        error = exception.ImageNotFound(image='i1')
        with self.assertRaises(exception.ImageNotFound) as caught:
            with agents.failures(_failed):
                raise error
        self.assertIs(error, caught.exception)

    def test_nothing_failed(self):
        with agents.failures(_failed):
            result = 'answer'
        self.assertEqual('answer', result)
