"""cyborg.compat.prometheus on prometheus_client's own values module: the
value class is chosen again from the environment, as at import."""

import os
import shutil
import tempfile

from prometheus_client import values
import testtools

from cyborg.compat import prometheus as prometheus_compat


class ValueClassTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        before = values.ValueClass
        self.addCleanup(setattr, values, 'ValueClass', before)
        environ = dict(os.environ)
        self.addCleanup(os.environ.update, environ)
        self.addCleanup(os.environ.pop, 'PROMETHEUS_MULTIPROC_DIR', None)

    def test_multiprocess_values_once_the_directory_is_set(self):
        os.environ.pop('PROMETHEUS_MULTIPROC_DIR', None)
        prometheus_compat.choose_value_class()
        self.assertIs(values.MutexValue, values.ValueClass)
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory)
        os.environ['PROMETHEUS_MULTIPROC_DIR'] = directory
        prometheus_compat.choose_value_class()
        value = values.ValueClass('counter', 'c', 'c', (), (),
                                  help_text='h')
        value.inc(1)
        self.assertEqual(1, value.get())
        self.assertTrue(any(name.startswith('counter_')
                            for name in os.listdir(directory)))
