"""The binding asks the agent of an ARQ's device, by the agent's
``[DEFAULT] host``, whatever name Nova bound the ARQ on (issue #44)."""

from unittest import mock

from cyborg.conductor import binding
from cyborg.db import accelerator_requests as db_arqs
from cyborg.tests import base

MDEV_INFO = {'domain': '0000', 'bus': '3b', 'device': '00', 'function': '4',
             'asked_type': 'nvidia-222'}


def arq(**values):
    """An ARQView of an mdev bound on Nova's host cmp-1.example.org whose
    device's agent is cmp-1, with ``values``."""
    view = db_arqs.ARQView(*[None] * len(db_arqs.ARQView._fields))
    return view._replace(**dict(
        dict(uuid='a1', hostname='cmp-1.example.org', agent_host='cmp-1',
             attach_handle_type='MDEV', attach_handle_uuid='m1',
             attach_handle_info=MDEV_INFO, group={}), **values))


class AgentHostTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.agents = mock.Mock()
        self.binding = binding.Binding(self.conf, agents=self.agents)
        self.context = mock.sentinel.context

    def test_the_agent_host_of_a_device(self):
        self.assertEqual('cmp-1', binding.agent_host(arq()))

    def test_the_bound_host_before_there_is_a_device(self):
        self.assertEqual('cmp-1.example.org',
                         binding.agent_host(arq(agent_host=None)))

    def test_an_mdev_is_created_by_the_devices_agent(self):
        handle = mock.Mock(attach_type='MDEV', uuid='m1')
        self.binding._prepare(self.context, arq(), mock.Mock(), handle)
        self.agents.create_mdev.assert_called_once_with(
            self.context, 'cmp-1', '0000:3b:00.4', 'nvidia-222', 'm1')

    def test_an_mdev_is_removed_by_the_devices_agent(self):
        self.binding.remove_mdev(self.context, arq())
        self.agents.remove_mdev.assert_called_once_with(
            self.context, 'cmp-1', '0000:3b:00.4', 'nvidia-222', 'm1')
