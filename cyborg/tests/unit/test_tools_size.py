"""``tools/`` stays a set of tools, not a second product: no file in it
is longer than the largest source file of the service itself (the
largest ``.py`` file under ``cyborg/`` outside ``cyborg/tests/``). A
script that grows past it is split: what several scripts share goes to a
module of ``tools/bench/``, simulation to :mod:`cyborg.sim`. (That
``tools/`` reaches nothing outside the repository is
``test_outside_paths``.) The service's own source files stay under the
house limit of STYLE.md, about 800 lines: a module that grows past it is
split where its parts have separate concerns."""

import os

import testtools

from cyborg.tests.unit import test_hygiene

TOP = test_hygiene.TOP
#: The most lines a source file of the service may have.
SOURCE_LIMIT = 800


def line_count(path):
    with open(path, 'rb') as f:
        return sum(1 for _line in f)


def files_under(directory, keep=lambda path: True):
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != '__pycache__'
                   and not d.startswith('.')]
        for name in files:
            path = os.path.join(root, name)
            if keep(path) and not os.path.islink(path):
                yield os.path.relpath(path, TOP)


def is_service_source(path):
    tests = os.path.join(TOP, 'cyborg', 'tests') + os.sep
    return path.endswith('.py') and not path.startswith(tests)


def largest_source():
    """(lines, path) of the largest non-test source file of cyborg/."""
    return max((line_count(os.path.join(TOP, path)), path)
               for path in files_under(os.path.join(TOP, 'cyborg'),
                                       is_service_source))


def too_long(limit):
    """``path: lines`` of each file of tools/ longer than ``limit``."""
    found = []
    for path in sorted(files_under(os.path.join(TOP, 'tools'))):
        lines = line_count(os.path.join(TOP, path))
        if lines > limit:
            found.append('%s: %d' % (path, lines))
    return found


class ToolsSizeTest(testtools.TestCase):

    def test_no_tool_is_longer_than_the_largest_source_file(self):
        limit, source = largest_source()
        self.assertEqual([], too_long(limit),
                         'files of tools/ longer than %s (%d lines)'
                         % (source, limit))

    def test_no_source_file_is_over_the_house_limit(self):
        over = ['%s: %d' % (path, line_count(os.path.join(TOP, path)))
                for path in sorted(files_under(os.path.join(TOP, 'cyborg'),
                                               is_service_source))
                if line_count(os.path.join(TOP, path)) > SOURCE_LIMIT]
        self.assertEqual([], over, 'source files over %d lines: split them'
                         % SOURCE_LIMIT)

    def test_what_counts(self):
        limit, source = largest_source()
        # A real source file, not a test; and the rule bites.
        self.assertTrue(source.startswith('cyborg/'), source)
        self.assertNotIn('cyborg/tests/', source)
        self.assertGreater(limit, 100)
        self.assertTrue(too_long(10))
        self.assertFalse(is_service_source(
            os.path.join(TOP, 'cyborg', 'tests', 'unit', 'x.py')))
        self.assertTrue(is_service_source(
            os.path.join(TOP, 'cyborg', 'db', 'x.py')))
        self.assertFalse(is_service_source(
            os.path.join(TOP, 'cyborg', 'db', 'x.txt')))
