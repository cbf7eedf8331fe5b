"""One process at a time on a state directory or file."""

import os
import subprocess
import sys

import fixtures

from cyborg.common import pidlock
from cyborg.tests import base

# Takes the lock, says so, and keeps it until its stdin closes.
HOLDER = ('import sys\n'
          'from cyborg.common import pidlock\n'
          'lock = pidlock.acquire(sys.argv[1])\n'
          'print("held", flush=True)\n'
          'sys.stdin.read()\n')


class PidLockTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'cyborg-aio.lock')

    def hold_elsewhere(self):
        """A process that holds the lock until the test ends."""
        holder = subprocess.Popen([sys.executable, '-c', HOLDER, self.path],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(holder.wait)
        self.addCleanup(holder.stdin.close)
        self.assertEqual('held\n', holder.stdout.readline())
        return holder

    def test_a_lock_held_elsewhere_is_refused_naming_its_pid(self):
        holder = self.hold_elsewhere()
        error = self.assertRaises(pidlock.Locked, pidlock.acquire, self.path)
        self.assertEqual(holder.pid, error.pid)
        self.assertEqual('in use by process %d (lock file %s)'
                         % (holder.pid, self.path), str(error))

    def test_the_lock_file_holds_our_pid(self):
        lock = pidlock.acquire(self.path)
        self.addCleanup(lock.close)
        with open(self.path) as f:
            self.assertEqual('%d\n' % os.getpid(), f.read())

    def test_a_lock_file_left_by_a_dead_process_blocks_nothing(self):
        dead = subprocess.Popen([sys.executable, '-c', HOLDER, self.path],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
        self.assertEqual('held\n', dead.stdout.readline())
        dead.kill()
        dead.wait()
        dead.stdout.close()
        dead.stdin.close()
        with open(self.path) as f:
            self.assertEqual('%d\n' % dead.pid, f.read())
        lock = pidlock.acquire(self.path)
        self.addCleanup(lock.close)
        with open(self.path) as f:
            self.assertEqual('%d\n' % os.getpid(), f.read())

    def test_closing_lets_go(self):
        pidlock.acquire(self.path).close()
        pidlock.acquire(self.path).close()

    def test_hold_exits_with_one_line_naming_the_option(self):
        holder = self.hold_elsewhere()
        error = self.assertRaises(SystemExit, pidlock.hold, self.path,
                                  'cyborg-agent', '[agent] state_file x')
        self.assertEqual('cyborg-agent: error: [agent] state_file x: in use '
                         'by process %d (lock file %s)'
                         % (holder.pid, self.path), error.code)

    def test_hold_an_unwritable_path_exits_2(self):
        not_a_dir = self.path + '.file'
        with open(not_a_dir, 'w'):
            pass
        stderr = self.useFixture(fixtures.StringStream('stderr'))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr.stream))
        error = self.assertRaises(SystemExit, pidlock.hold,
                                  os.path.join(not_a_dir, 'x.lock'),
                                  'cyborg-aio', '--state-dir d')
        self.assertEqual(2, error.code)
        self.assertIn('cyborg-aio: error: --state-dir d: cannot write',
                      stderr.getDetails()['stderr'].as_text())

    def test_hold_keeps_the_lock_for_the_life_of_the_process(self):
        pidlock.hold(self.path, 'cyborg-aio', '--state-dir d')
        self.addCleanup(pidlock._HELD.pop().close)
        error = self.assertRaises(
            subprocess.CalledProcessError, subprocess.run,
            [sys.executable, '-c', HOLDER, self.path], check=True,
            capture_output=True, text=True, stdin=subprocess.DEVNULL)
        self.assertIn('in use by process %d' % os.getpid(), error.stderr)
