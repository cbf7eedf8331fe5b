"""The ARQ state machine."""

from automaton import exceptions as automaton_exc

from cyborg.common import states
from cyborg.tests import base


class StatesTest(base.TestCase):

    def test_bind_path(self):
        machine = states.MACHINE.copy()
        machine.initialize()
        for target in (states.BIND_STARTED, states.BOUND, states.UNBOUND,
                       states.BIND_STARTED, states.BIND_FAILED):
            machine.process_event(target)
            self.assertEqual(target, machine.current_state)

    def test_forbidden_steps(self):
        machine = states.MACHINE.copy()
        machine.initialize()
        self.assertRaises(automaton_exc.NotFound, machine.process_event,
                          states.BOUND)

    def test_sources(self):
        self.assertEqual([states.INITIAL, states.UNBOUND],
                         states.sources_of(states.BIND_STARTED))
        self.assertEqual([states.BIND_STARTED],
                         states.sources_of(states.BOUND))
        self.assertNotIn(states.DELETING, states.sources_of(states.UNBOUND))

    def test_resolved_and_nova_status(self):
        self.assertEqual({states.BOUND, states.BIND_FAILED, states.DELETING},
                         set(states.RESOLVED))
        self.assertEqual('completed', states.nova_status(states.BOUND))
        self.assertEqual('failed', states.nova_status(states.BIND_FAILED))
