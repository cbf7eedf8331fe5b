"""The sudoers line of the install guide lets the agent start exactly
cyborg's privsep helper, with cyborg's configuration file, as oslo.privsep
really starts it, and nothing else."""

import os
import re
import shutil
import tempfile

from cyborg import privsep
from cyborg.tests import base

GUIDE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doc',
                     'source', 'install', 'production.rst')
CONFIG = '/etc/cyborg/cyborg.conf'


def sudoers_arguments():
    """The regular expression of the guide's sudoers line."""
    with open(GUIDE) as f:
        [line] = [line.strip() for line in f
                  if line.strip().startswith('cyborg ALL')]
    command, arguments = line.split(': ', 1)[1].split(' ', 1)
    assert command.endswith('/privsep-helper'), command
    assert arguments.startswith('^') and arguments.endswith('$'), arguments
    return re.compile(arguments[1:-1])


class SudoersLineTest(base.TestCase):

    def helper_arguments(self, context=privsep.sys_admin_pctxt):
        self.flags(config_file=[CONFIG])
        # As oslo.privsep makes it, in the agent's unit (no TMPDIR).
        tmpdir = tempfile.mkdtemp(dir='/tmp')
        self.addCleanup(shutil.rmtree, tmpdir)
        command = context.helper_command(os.path.join(tmpdir,
                                                      'privsep.sock'))
        self.assertEqual(['sudo', 'privsep-helper'], command[:2])
        return ' '.join(command[2:])

    def test_the_guide_allows_cyborgs_helper(self):
        self.assertTrue(sudoers_arguments().fullmatch(
            self.helper_arguments()))

    def test_the_guide_allows_nothing_else(self):
        allowed = sudoers_arguments()
        arguments = self.helper_arguments()
        for other in (
                arguments.replace('cyborg.privsep.sys_admin_pctxt',
                                  'os_brick.privileged.default'),
                arguments.replace(CONFIG, '/tmp/mine.conf'),
                arguments + ' --privsep_context os_brick.privileged.default',
                arguments.replace('/privsep.sock', '/../x/privsep.sock'),
                '--config-file %s %s' % ('/tmp/mine.conf', arguments)):
            self.assertIsNone(allowed.fullmatch(other), other)
        with open(GUIDE) as f:
            self.assertNotRegex(f.read(), r'NOPASSWD: \S+ \*')
