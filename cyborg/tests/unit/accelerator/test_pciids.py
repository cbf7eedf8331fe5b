"""Names from the PCI ID database, as lspci gives them."""

import gzip
import os
import shutil

import fixtures

from cyborg.accelerator.common import pciids
from cyborg.tests import base
from cyborg.tests.unit.accelerator import sysfs


class DatabaseTest(base.TestCase):

    def setUp(self):
        super().setUp()
        # Debian's pci.ids of 2023-04, trimmed: read afresh for each test.
        with open(sysfs.PCI_IDS, encoding='utf-8') as f:
            self.db = pciids.Database(f.read())

    def test_names_as_lspci(self):
        self.assertEqual('NVIDIA Corporation GH100[H100 SXM5 80GB]',
                         self.db.name('10de', '2330'))
        self.assertEqual('NVIDIA Corporation TU104GL [Tesla T4]',
                         self.db.name('10DE', '1EB8'))
        # The database predates the H200: pciutils' words for it.
        self.assertEqual('NVIDIA Corporation Device 2335',
                         self.db.name('10de', '2335'))
        self.assertEqual('Device abce:0001', self.db.name('abce', '0001'))
        self.assertEqual('Red Hat, Inc. Virtio 1.0 network device',
                         self.db.name('1af4', '1041'))

    def test_parts(self):
        self.assertEqual('NVIDIA Corporation', self.db.vendor('10de'))
        self.assertEqual('GH100[H100 SXM5 80GB]',
                         self.db.device('10de', '2330'))
        self.assertIsNone(self.db.device('10de', '2335'))
        self.assertIsNone(self.db.vendor('abce'))
        # A device of one vendor is not found under another.
        self.assertIsNone(self.db.device('1af4', '2330'))

    def test_subsystems(self):
        self.assertEqual('QEMU Virtual Machine',
                         self.db.subsystem('1af4', '1110', '1af4', '1100'))
        self.assertEqual('Red Hat, Inc. QEMU Virtual Machine',
                         self.db.subsystem_name('1af4', '1110', '1af4',
                                                '1100'))
        # The H100's board: no entry, named by its vendor.
        self.assertEqual('NVIDIA Corporation Device 16c1',
                         self.db.subsystem_name('10de', '2330', '10de',
                                                '16c1'))
        self.assertEqual('Device 0bad:0001',
                         self.db.subsystem_name('10de', '2330', '0bad',
                                                '0001'))
        # Subsystem lines belong to the device above them only.
        self.assertIsNone(self.db.subsystem('1af4', '1041', '1af4', '1100'))
        self.assertEqual('Propolis Virtio network device',
                         self.db.subsystem('1af4', '1000', '01de', 'fffb'))

    def test_the_class_list_is_not_vendors(self):
        self.assertIsNone(self.db.vendor('C 00'))
        self.assertIsNone(self.db.device('8086', '00'))
        self.assertEqual('Intel Corporation C62x Chipset QuickAssist '
                         'Technology Virtual Function',
                         self.db.name('8086', '37c9'))

    def test_empty(self):
        db = pciids.Database()
        self.assertEqual('Device 10de:2330', db.name('10de', '2330'))
        self.assertEqual('Device 10de:16c1',
                         db.subsystem_name('10de', '2330', '10de', '16c1'))


class LoadTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # Each test sees its own files read once.
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.accelerator.common.pciids._LOADED', {}))

    def test_read_once_per_path(self):
        first = pciids.load(sysfs.PCI_IDS)
        self.assertIs(first, pciids.load(sysfs.PCI_IDS))
        self.assertEqual('NVIDIA Corporation', first.vendor('10de'))

    def test_gzip(self):
        path = os.path.join(self.tmp, 'pci.ids.gz')
        with open(sysfs.PCI_IDS, 'rb') as f, gzip.open(path, 'wb') as out:
            shutil.copyfileobj(f, out)
        self.assertEqual('NVIDIA Corporation GH100[H100 SXM5 80GB]',
                         pciids.load(path).name('10de', '2330'))

    def test_missing_or_unreadable_names_by_ids(self):
        logs = self.useFixture(fixtures.FakeLogger(level='WARNING'))
        self.assertEqual('Device 10de:2330',
                         pciids.load(None).name('10de', '2330'))
        self.assertEqual('', logs.output)
        missing = os.path.join(self.tmp, 'nope.ids')
        self.assertEqual('Device 10de:2330',
                         pciids.load(missing).name('10de', '2330'))
        self.assertIn('Cannot read the PCI ID database %s' % missing,
                      logs.output)
        garbage = os.path.join(self.tmp, 'bad.ids.gz')
        with open(garbage, 'w') as f:
            f.write('not gzip')
        self.assertIsNone(pciids.load(garbage).vendor('10de'))

    def test_search_paths_and_option(self):
        first = os.path.join(self.tmp, 'misc', 'pci.ids')
        second = os.path.join(self.tmp, 'hwdata', 'pci.ids')
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.accelerator.common.pciids.SEARCH_PATHS',
            (first, second)))
        self.assertIsNone(pciids.find())
        os.makedirs(os.path.dirname(second))
        shutil.copy(sysfs.PCI_IDS, second)
        self.assertEqual(second, pciids.find())
        os.makedirs(os.path.dirname(first))
        shutil.copy(sysfs.PCI_IDS, first)
        self.assertEqual(first, pciids.find())
        self.assertEqual('/elsewhere/pci.ids', pciids.find(
            '/elsewhere/pci.ids'))
        self.flags(pci_ids_path=second, group='agent')
        self.assertIs(pciids.load(second), pciids.database(self.conf))
