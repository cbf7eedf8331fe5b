"""The release identity: the version pbr gives (``setup.cfg``'s release
being prepared, or the release tag of the commit) and the release notes
grouped by release (doc/source/contributor/releasing.rst)."""

import configparser
import os
import subprocess
import sys

import fixtures
from packaging import version as pkg_version
import testtools

from cyborg.tests.unit import test_hygiene
from cyborg import version

TOP = test_hygiene.TOP
#: The project's first release.
FIRST_RELEASE = '1.0.0'


def setup_cfg_version():
    parser = configparser.ConfigParser()
    parser.read(os.path.join(TOP, 'setup.cfg'))
    return parser['metadata']['version']


class ReleaseTest(testtools.TestCase):

    def git(self, *args, cwd):
        return subprocess.run(
            ['git', '-c', 'user.name=cyborg tests',
             '-c', 'user.email=tests@cyborg.invalid'] + list(args),
            cwd=cwd, check=True, capture_output=True, text=True,
            timeout=120).stdout

    def pbr_version(self, cwd):
        """What pbr makes of the tree at ``cwd``, as at install time."""
        return subprocess.run(
            [sys.executable, '-c', 'from pbr import packaging; print('
             'packaging._get_version_from_git(%r))' % setup_cfg_version()],
            cwd=cwd, capture_output=True, text=True, timeout=120)

    def reno_titles(self, cwd):
        out = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), 'reno'),
             'report', '.'], cwd=cwd,
            check=True, capture_output=True, text=True, timeout=300).stdout
        lines = out.splitlines()
        # Version titles: underlined with '=' right below, after the
        # report's own title.
        return [lines[i] for i in range(3, len(lines) - 1)
                if lines[i] and set(lines[i + 1]) == {'='}
                and len(lines[i + 1]) == len(lines[i])]

    def test_the_installed_version_is_a_release_or_leads_to_one(self):
        installed = pkg_version.Version(version.version_string())
        self.assertGreaterEqual(installed.release,
                                pkg_version.Version(FIRST_RELEASE).release)
        self.assertGreaterEqual(pkg_version.Version(setup_cfg_version()),
                                pkg_version.Version(FIRST_RELEASE))

    def test_setup_cfg_names_a_release_ahead_of_the_tags(self):
        """After a release is tagged, the next commit names the next
        release in setup.cfg: else pbr refuses to install the tree."""
        done = self.pbr_version(TOP)
        self.assertEqual(0, done.returncode,
                         'pbr cannot make a version of this tree: set '
                         'setup.cfg\'s version to the next release (see '
                         'doc/source/contributor/releasing.rst):\n%s'
                         % done.stderr)

    def test_a_release_tag_makes_the_release_and_groups_its_notes(self):
        """In a clone: the commit tagged with setup.cfg's version is that
        release, and its notes are grouped under it; a note committed
        after it is "Not yet released"."""
        clone = os.path.join(self.useFixture(fixtures.TempDir()).path, 'c')
        self.git('clone', '-q', TOP, clone, cwd=TOP)
        for tag in self.git('tag', '-l', cwd=clone).split():
            self.git('tag', '-d', tag, cwd=clone)
        release = setup_cfg_version()
        self.git('tag', '-a', release, '-m', 'cyborg %s' % release,
                 cwd=clone)
        done = self.pbr_version(clone)
        self.assertEqual(release, done.stdout.strip(), done.stderr)
        self.assertEqual([release], self.reno_titles(clone))
        note = os.path.join(clone, 'releasenotes', 'notes',
                            'after-the-release-0123456789abcdef.yaml')
        with open(note, 'w') as f:
            f.write('---\nfixes:\n  - A fix after the release.\n')
        self.git('add', note, cwd=clone)
        self.git('commit', '-q', '-m', 'A fix', cwd=clone)
        self.assertEqual(['Not yet released', release],
                         self.reno_titles(clone))
