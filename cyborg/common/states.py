"""States of accelerator requests (ARQs), as an ``automaton`` machine.

An ARQ is created ``Initial``; a bind moves it to ``BindStarted`` and then
``Bound`` or ``BindFailed``; an unbind to ``Unbound``. Every transition is
a compare-and-swap in the database (``UPDATE ... WHERE state IN
(<sources>)``), with the sources read from this machine, so two
conductors never both win the same step. ``Deleting`` is counted as
resolved, as upstream does, for clients that look for it.
"""

from automaton import machines

INITIAL = 'Initial'
BIND_STARTED = 'BindStarted'
BOUND = 'Bound'
BIND_FAILED = 'BindFailed'
UNBOUND = 'Unbound'
DELETING = 'Deleting'

ALL = (INITIAL, BIND_STARTED, BOUND, BIND_FAILED, UNBOUND, DELETING)

# What Nova waits for: the ARQ will not change without another request.
RESOLVED = frozenset((BOUND, BIND_FAILED, DELETING))
# An ARQ in these states holds a device for its instance, or is taking one.
HOLDING = frozenset((BIND_STARTED, BOUND))

# target: the states it may be reached from.
_TRANSITIONS = {
    BIND_STARTED: (INITIAL, UNBOUND),
    BOUND: (BIND_STARTED,),
    BIND_FAILED: (BIND_STARTED, BOUND),
    UNBOUND: (INITIAL, BIND_STARTED, BOUND, BIND_FAILED, UNBOUND),
    DELETING: (INITIAL, BIND_STARTED, BOUND, BIND_FAILED, UNBOUND),
}


def _build():
    machine = machines.FiniteMachine()
    for state in ALL:
        machine.add_state(state)
    for target, sources in _TRANSITIONS.items():
        for source in sources:
            machine.add_transition(source, target, target)
    machine.default_start_state = INITIAL
    machine.freeze()
    return machine


MACHINE = _build()


def sources_of(target):
    """The states from which ``target`` can be reached, sorted."""
    return sorted({start for start, _event, end in MACHINE
                   if end == target})


def nova_status(state):
    """The status Nova's ``accelerator-request-bound`` event carries."""
    return 'completed' if state == BOUND else 'failed'
