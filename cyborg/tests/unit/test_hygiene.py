"""Style and structure rules that CI enforces through the test suite:
ruff (with the complexity limit), the import contracts of .importlinter
(who may import what, DESIGN.md) and bashate on the shell scripts."""

import os
import shutil
import subprocess
import sys

import testtools

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))
SCRIPTS = ['tools/run-tests', 'tools/aio', 'tools/nova-e2e',
           'tools/peer-suite',
           'tools/lib/venv.sh', '.ci/run',
           'devstack/plugin.sh', 'devstack/lib/cyborg', 'devstack/settings']


def _tool(name):
    path = shutil.which(name, path=os.path.dirname(sys.executable))
    return path or shutil.which(name)


class HygieneTest(testtools.TestCase):

    def run_tool(self, name, *args):
        tool = _tool(name)
        if tool is None:
            self.fail('%s is not installed; it is in test-requirements.txt'
                      % name)
        result = subprocess.run([tool] + list(args), cwd=TOP,
                                capture_output=True, text=True,
                                timeout=300)
        self.assertEqual(0, result.returncode,
                         '%s failed:\n%s%s' % (name, result.stdout,
                                               result.stderr))

    def test_ruff(self):
        self.run_tool('ruff', 'check', 'cyborg')

    def test_import_contracts(self):
        self.run_tool('lint-imports', '--config',
                      os.path.join(TOP, '.importlinter'))

    def test_bashate(self):
        scripts = [s for s in SCRIPTS if os.path.exists(os.path.join(TOP, s))]
        self.run_tool('bashate', '-i', 'E006', *scripts)
