"""cyborg keeps eventlet out of its processes (cyborg/__init__.py), except
where an installed library imports it unconditionally: oslo.privsep
before 3.11, which stable/2026.1's upper-constraints pin."""

from importlib import metadata
import subprocess
import sys
from unittest import mock

import testtools

import cyborg


class NoEventletTest(testtools.TestCase):

    def _imports(self, version):
        def fake(name):
            self.assertEqual('oslo.privsep', name)
            if version is None:
                raise metadata.PackageNotFoundError(name)
            return version
        with mock.patch.object(metadata, 'version', fake):
            return cyborg._a_library_imports_eventlet()

    def test_privsep_before_3_11_needs_it(self):
        self.assertTrue(self._imports('3.10.1'))
        self.assertTrue(self._imports('2.8.0'))

    def test_privsep_3_11_and_later_and_none_do_not(self):
        self.assertFalse(self._imports('3.11.0'))
        self.assertFalse(self._imports('3.12.0'))
        self.assertFalse(self._imports('4.0.0'))
        self.assertFalse(self._imports(None))

    def test_a_daemon_process_has_its_configuration_without_eventlet(self):
        # What a daemon imports first; eventlet stays out unless a library
        # installed here cannot do without it.
        out = subprocess.run(
            [sys.executable, '-c',
             'import sys, cyborg.conf.opts; '
             'print(sys.modules.get("eventlet", "absent") is None)'],
            capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(str(not cyborg._a_library_imports_eventlet()), out)
