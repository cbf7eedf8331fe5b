"""Simulated compute hosts: the real agent protocol without hardware.

:mod:`cyborg.sim.hosts` plays many hosts in one process (their reports,
heartbeats, rescans and a trickle of card changes), and
:mod:`cyborg.sim.processes` shares them out among several processes;
:mod:`cyborg.sim.nova` plays the Nova that conductors send their events
to. The functional tests and ``tools/bench/`` import it.

It is installed with cyborg (``tools/bench/scale`` runs from a checkout
or against an installed tree alike), yet no daemon imports it (a
contract of ``.importlinter``), and it imports nothing that only the
tests install (``cyborg.tests.unit.test_sim_imports``).
"""
