"""The host simulator (:mod:`cyborg.sim`) is installed with cyborg and
imported by ``tools/bench/scale`` outside any test: it must import
nothing that only the tests install, nor the test package itself. (That
no daemon imports it is a contract of ``.importlinter``.)"""

import json
import os
import subprocess
import sys

import testtools

from cyborg.tests.unit import test_hygiene

#: Top-level modules of what test-requirements.txt installs for the
#: tests alone.
TEST_ONLY = ('fixtures', 'testtools', 'oslotest', 'testscenarios',
             'testresources', 'hypothesis', 'pytest', 'gunicorn')
PROBE = '''
import json, sys
import cyborg.sim.hosts, cyborg.sim.nova, cyborg.sim.processes
print(json.dumps(sorted(name for name in sys.modules
                        if name.split('.')[0] in %r
                        or name.startswith('cyborg.tests'))))
''' % (TEST_ONLY,)


class SimImportsTest(testtools.TestCase):

    def test_no_test_only_module_is_imported(self):
        env = dict(os.environ, PYTHONPATH=test_hygiene.TOP)
        result = subprocess.run([sys.executable, '-c', PROBE], env=env,
                                capture_output=True, text=True, timeout=120,
                                cwd=test_hygiene.TOP)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([], json.loads(result.stdout.splitlines()[-1]))
