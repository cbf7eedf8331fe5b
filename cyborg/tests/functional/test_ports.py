"""``daemons.free_port``: the ports tests give their daemons."""

import os
import socket
import subprocess
import sys
import textwrap

import fixtures
import testtools

from cyborg.tests.functional import daemons

#: A range no other test uses (theirs: daemons.PORT_RANGE, galera's,
#: the benchmarks'), below the default ephemeral range.
RANGE = (29500, 29502)

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))

HOLDER = textwrap.dedent('''
    import sys
    from cyborg.tests.functional import daemons
    daemons.PORT_RANGE = (%d, %d)
    print(daemons.free_port(), flush=True)
    sys.stdin.read()
''')


class FreePortTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.tests.functional.daemons.PORT_RANGE', RANGE))
        # This process's own reservations of RANGE go with the test.
        self.addCleanup(self._release)

    @staticmethod
    def _release():
        for port in range(RANGE[0], RANGE[1] + 1):
            fd = daemons._RESERVED.pop(port, None)
            if fd is not None:
                os.close(fd)

    def _holder(self, low, high):
        """A process that takes a port of ``low``-``high`` and keeps it
        until the test ends; returns the port."""
        child = subprocess.Popen(
            [sys.executable, '-c', HOLDER % (low, high)], cwd=TOP,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def stop():
            child.stdin.close()
            child.wait(timeout=30)
            child.stdout.close()
        self.addCleanup(stop)
        return int(child.stdout.readline())

    def test_out_of_the_ephemeral_range(self):
        low, high = daemons._ephemeral_range()
        port = daemons.free_port()
        self.assertTrue(RANGE[0] <= port <= RANGE[1], port)
        self.assertFalse(low <= port <= high, (port, low, high))

    def test_never_twice_while_held(self):
        # Each port once in this process; the range spent, an error.
        ports = {daemons.free_port() for _ in range(3)}
        self.assertEqual(set(range(RANGE[0], RANGE[1] + 1)), ports)
        self.assertRaises(OSError, daemons.free_port)

    def test_another_process_keeps_its_port(self):
        held = self._holder(*RANGE)
        self.assertTrue(RANGE[0] <= held <= RANGE[1], held)
        # The holder does not listen on it: only its lock keeps it.
        mine = {daemons.free_port() for _ in range(2)}
        self.assertNotIn(held, mine)
        self.assertRaises(OSError, daemons.free_port)

    def test_a_dead_process_gives_its_ports_back(self):
        child = subprocess.run(
            [sys.executable, '-c', HOLDER % (RANGE[0], RANGE[0])], cwd=TOP,
            input='', capture_output=True, text=True, check=True)
        self.assertEqual(RANGE[0], int(child.stdout))
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.tests.functional.daemons.PORT_RANGE',
            (RANGE[0], RANGE[0])))
        self.assertEqual(RANGE[0], daemons.free_port())

    def test_a_port_in_use_is_skipped(self):
        with socket.socket() as taken:
            taken.bind(('127.0.0.1', RANGE[1]))
            taken.listen()
            ports = {daemons.free_port() for _ in range(2)}
        self.assertEqual({RANGE[0], RANGE[0] + 1}, ports)
