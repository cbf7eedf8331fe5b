"""``cyborg-status keys``: a command of its own (:mod:`cyborg.cmd.keys`)
with a sub-command per action, each with its own options and help."""

import contextlib
import io
import os

import fixtures

from cyborg.cmd import keys as keys_cmd
from cyborg.cmd import status
from cyborg.tests import base


class KeysCommandsTest(base.TestCase):

    def run_status(self, argv):
        """(exit status, stdout, stderr) of ``cyborg-status argv``."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = status.main(argv)
            except SystemExit as e:
                code = e.code
        return code, out.getvalue(), ' '.join(err.getvalue().split())

    def test_keys_help_lists_each_command(self):
        code, out, _err = self.run_status(['keys', '--help'])
        self.assertEqual(0, code)
        text = ' '.join(out.split())
        self.assertIn('{create,rotate,retire,broker}', text)
        for _name, (help_text, _function) in keys_cmd.KEY_COMMANDS.items():
            self.assertIn(' '.join(help_text.split()), text)
        self.assertIn('rabbitmqctl commands of the broker users', text)

    def test_each_command_has_its_own_options(self):
        code, out, _err = self.run_status(['keys', 'rotate', '--help'])
        self.assertEqual(0, code)
        self.assertIn('--key-dir', out)
        self.assertNotIn('--conductor', out)
        code, out, _err = self.run_status(['keys', 'broker', '--help'])
        self.assertEqual(0, code)
        self.assertIn('--conductor', out)
        self.assertNotIn('--key-dir', out)
        # broker writes no key: it takes no key directory.
        code, _out, err = self.run_status(['keys', 'broker', '--key-dir',
                                           '/tmp/x'])
        self.assertEqual(2, code)
        self.assertIn('--key-dir', err)

    def test_a_command_is_required_and_said_in_words(self):
        code, _out, err = self.run_status(['keys'])
        self.assertEqual(2, code)
        self.assertIn('required', err)
        code, _out, err = self.run_status(['keys', 'renew', '--api'])
        self.assertEqual(2, code)
        self.assertIn("invalid choice: 'renew'", err)
        key_dir = os.path.join(self.useFixture(fixtures.TempDir()).path, 'k')
        code, _out, err = self.run_status(['keys', 'retire', '--key-dir',
                                           key_dir])
        self.assertEqual(2, code)
        self.assertEqual('cyborg-status keys: retire: give --api or --host',
                         err)

    def test_what_was_done_to_each_key_is_a_word(self):
        key_dir = os.path.join(self.useFixture(fixtures.TempDir()).path, 'k')
        said = []
        for action in ('create', 'create', 'rotate', 'retire'):
            code, out, _err = self.run_status(['keys', action, '--api',
                                               '--key-dir', key_dir])
            self.assertEqual(0, code)
            said.append(out.splitlines()[-1])
        self.assertEqual(['%s %s' % (word, os.path.join(key_dir, 'api.key'))
                          for word in ('created', 'kept', 'rotated',
                                       'retired')], said)
