"""cyborg.compat.oslo_config on oslo.config's own objects: the options of
a namespace, the sections and values a ConfigOpts read, and their files."""

import os
import tempfile

from oslo_config import cfg
import testtools

from cyborg.compat import oslo_config as config_compat


class OsloConfigTest(testtools.TestCase):

    def test_list_opts_of_a_namespace(self):
        listings = config_compat.list_opts(['oslo.log'])
        self.assertEqual('oslo.log', listings[0][0])
        groups = dict(listings[0][1])
        self.assertIn('debug', [opt.name for opt in groups[None]])

    def test_an_unknown_namespace_lists_nothing(self):
        self.assertEqual([], config_compat.list_opts(
            ['cyborg.no.such.namespace']))

    def test_parsed_sections_and_their_files(self):
        directory = tempfile.mkdtemp()
        self.addCleanup(os.rmdir, directory)
        paths = []
        for name, text in (('a.conf', '[DEFAULT]\nfoo = 1\n[one]\nx = 2\n'),
                           ('b.conf', '[two]\ny = 3\n')):
            path = os.path.join(directory, name)
            with open(path, 'w') as f:
                f.write(text)
            self.addCleanup(os.remove, path)
            paths.append(path)
        conf = cfg.ConfigOpts()
        self.assertEqual([], list(config_compat.parsed_sections(conf)))
        self.assertIsNone(config_compat.file_of(conf, 'one'))
        conf([], default_config_files=paths)
        sections = dict(config_compat.parsed_sections(conf))
        self.assertEqual({'foo': ['1']}, sections['DEFAULT'])
        self.assertEqual({'x': ['2']}, sections['one'])
        self.assertEqual({'y': ['3']}, sections['two'])
        self.assertEqual(paths[0], config_compat.file_of(conf, 'one'))
        self.assertEqual(paths[1], config_compat.file_of(conf, 'two'))
        self.assertIsNone(config_compat.file_of(conf, 'three'))
