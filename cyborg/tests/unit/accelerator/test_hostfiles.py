"""The host's small files: one reader, one failure rule, one mount-table
parser (:mod:`cyborg.accelerator.common.hostfiles`)."""

import gzip
import os

import fixtures
import testtools

from cyborg.accelerator.common import hostfiles

#: Lines of a real mountinfo: a disk partition, proc, an overlay on a
#: device number of the "0:" kind, a line with optional fields, and
#: one cut short.
MOUNTINFO = (
    '29 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n'
    '22 29 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc '
    'proc rw\n'
    '412 29 0:52 / /var/lib/docker/overlay2/x/merged rw,relatime - overlay '
    'overlay rw,lowerdir=/a\n'
    '95 29 259:3 /data /srv ro,noatime master:7 shared:40 - xfs '
    '/dev/nvme0n1p3 ro\n'
    '96 29 8:2 / /broken\n')


class ReadTextTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def path(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, 'wb') as f:
            f.write(data)
        return path

    def test_text_with_odd_bytes_replaced(self):
        path = self.path('swaps', b'Filename\n/dev/sdb2 \xff\n')
        self.assertEqual('Filename\n/dev/sdb2 \ufffd\n',
                         hostfiles.read_text(path))

    def test_limit(self):
        self.assertEqual('abc', hostfiles.read_text(
            self.path('x', b'abcdef'), limit=3))

    def test_gzip_is_read_through(self):
        path = self.path('pci.ids.gz', gzip.compress(b'8086  Intel\n'))
        self.assertEqual('8086  Intel\n', hostfiles.read_text(path))

    def test_every_failure_is_none_with_its_reason(self):
        missing = os.path.join(self.tmp, 'missing')
        directory = self.tmp
        corrupt = self.path('bad.gz', b'not gzip at all')
        truncated = self.path('cut.gz', gzip.compress(b'x' * 1000)[:20])
        for path in (missing, directory, corrupt, truncated):
            problems = []
            self.assertIsNone(hostfiles.read_text(path, problems=problems),
                              path)
            self.assertEqual(1, len(problems), path)
            self.assertTrue(problems[0], path)
        # Without a list, the same None.
        self.assertIsNone(hostfiles.read_text(missing))


class MountsTest(testtools.TestCase):

    def test_fields(self):
        found = hostfiles.mounts(MOUNTINFO)
        self.assertEqual(
            [('8:1', '/', '/', 'rw', 'ext4', '/dev/sda1'),
             ('0:21', '/', '/proc', 'rw', 'proc', 'proc'),
             ('0:52', '/', '/var/lib/docker/overlay2/x/merged', 'rw',
              'overlay', 'overlay'),
             ('259:3', '/data', '/srv', 'ro', 'xfs', '/dev/nvme0n1p3')],
            [m[:6] for m in found])

    def test_nothing_to_parse(self):
        self.assertEqual([], hostfiles.mounts(None))
        self.assertEqual([], hostfiles.mounts(''))
        self.assertEqual([], hostfiles.mounts('garbage\n1 2 3\n'))

    def test_a_mount_without_source(self):
        [mount] = hostfiles.mounts('30 1 0:40 / /x rw - tmpfs\n')
        self.assertEqual(('tmpfs', ''), (mount.fstype, mount.source))


class ProcRootTest(testtools.TestCase):

    def test_proc_beside_the_sysfs_root(self):
        self.assertEqual('/proc', hostfiles.proc_root('/sys'))
        self.assertEqual('/tmp/x/proc', hostfiles.proc_root('/tmp/x/sys/'))
