"""cyborg installs with the upper-constraints of the OpenStack releases
whose Nova it supports (tools/lib/constraints/): every requirement must
admit the version each file pins, or ``pip install -c`` fails for the
deployers who install that way."""

import os
import re

import fixtures
from packaging import markers
from packaging import requirements
from packaging import utils
from packaging import version
import testtools

from cyborg.tests.unit import test_hygiene

TOP = test_hygiene.TOP
CONSTRAINTS = os.path.join(TOP, 'tools', 'lib', 'constraints')
FILES = ('upper-constraints-2026.1.txt',
         'upper-constraints-master-2026-08.txt')
REQUIREMENT_FILES = ('requirements.txt', 'test-requirements.txt')


def read_constraints(path):
    """{canonical name: Version} of the lines of ``path`` that apply to
    this Python (``name===version;marker``)."""
    pins = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            spec, _, marker = line.partition(';')
            if marker.strip() and \
                    not markers.Marker(marker.strip()).evaluate():
                continue
            match = re.fullmatch(r'([A-Za-z0-9._-]+)===(\S+)', spec.strip())
            if match is None:
                raise ValueError('%s:%d: not name===version: %r'
                                 % (path, number, line))
            pins[utils.canonicalize_name(match.group(1))] = \
                version.Version(match.group(2))
    return pins


def read_requirements(path):
    """[(line number, Requirement)] of a requirements file."""
    found = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            text = line.split('#', 1)[0].strip()
            if text:
                found.append((number, requirements.Requirement(text)))
    return found


def misfits(pins, requirement_files):
    """'file:line: requirement excludes pinned version' for each
    requirement that refuses the version ``pins`` holds for it."""
    found = []
    for path in requirement_files:
        for number, requirement in read_requirements(path):
            pinned = pins.get(utils.canonicalize_name(requirement.name))
            if pinned is None:
                continue
            if not requirement.specifier.contains(pinned, prereleases=True):
                found.append('%s:%d: %s excludes the pinned %s' % (
                    os.path.basename(path), number, requirement, pinned))
    return found


class ConstraintsTest(testtools.TestCase):

    def test_every_requirement_admits_each_release_pin(self):
        paths = [os.path.join(TOP, name) for name in REQUIREMENT_FILES]
        for name in FILES:
            pins = read_constraints(os.path.join(CONSTRAINTS, name))
            self.assertGreater(len(pins), 300, name)
            self.assertEqual([], misfits(pins, paths), name)

    def test_a_requirement_that_refuses_a_pin_is_found(self):
        path = self._write('SQLAlchemy>=2.0.0,<2.0.50\n'
                                        'unpinned-thing>=1\n')
        pins = {'sqlalchemy': version.Version('2.0.52')}
        self.assertEqual(
            ['%s:1: SQLAlchemy<2.0.50,>=2.0.0 excludes the pinned 2.0.52'
             % os.path.basename(path)], misfits(pins, [path]))

    def test_markers_for_other_pythons_are_left_out(self):
        path = self._write(
            'foo===1.0;python_version<"3.0"\nfoo===2.0;python_version>="3.0"\n'
            'Bar_Baz===3.1\n')
        self.assertEqual({'foo': version.Version('2.0'),
                          'bar-baz': version.Version('3.1')},
                         read_constraints(path))

    def test_venv_installs_with_the_newest_by_default(self):
        with open(os.path.join(TOP, 'tools', 'lib', 'venv.sh')) as f:
            text = f.read()
        self.assertIn('tools/lib/constraints/' + FILES[-1], text)
        self.assertEqual(sorted(FILES + ('README.rst',)),
                         sorted(os.listdir(CONSTRAINTS)))

    def _write(self, text):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'requirements.txt')
        with open(path, 'w') as f:
            f.write(text)
        return path
