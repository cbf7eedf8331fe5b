"""doc/source/contributor/architecture.rst names only what exists: every
``cyborg/...`` path and every ``cyborg.module.attribute`` it cites (an
entry point group of setup.cfg counts as existing)."""

import importlib
import os
import re

import testtools

from cyborg.tests.unit import test_hygiene

TOP = test_hygiene.TOP
PAGE = os.path.join(TOP, 'doc', 'source', 'contributor', 'architecture.rst')
LITERAL = re.compile(r'``([^`]+)``')
PATH = re.compile(r'^cyborg/[\w./-]*$')
DOTTED = re.compile(r'^cyborg(\.\w+)+$')
# A shorter path, as a table cell gives it: ``db/models.py``.
RELATIVE = re.compile(r'^[\w.-]+/[\w./-]+$')
# Where a shorter path may start: the top, or a package it names.
BASES = ('', 'cyborg', 'cyborg/api', 'cyborg/db', 'cyborg/accelerator/drivers')


def _entry_point_groups():
    """The entry point groups of setup.cfg (``cyborg.accelerator.driver``
    is one, not a module)."""
    with open(os.path.join(TOP, 'setup.cfg')) as f:
        return set(re.findall(r'^\s*([\w.]+)\s*=\s*$', f.read(), re.M))


def _literals():
    with open(PAGE) as f:
        return set(LITERAL.findall(f.read().replace('\n', ' ')))


def resolve(name):
    """The object a dotted ``cyborg.`` name stands for: the longest
    importable module prefix, then attributes. Raises if absent."""
    parts = name.split('.')
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module('.'.join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(name)


class ArchitecturePageTest(testtools.TestCase):

    def test_the_page_names_paths_and_functions(self):
        literals = _literals()
        self.assertGreater(len([x for x in literals if PATH.match(x)]), 40)
        self.assertGreater(len([x for x in literals if DOTTED.match(x)]), 40)

    def test_every_path_exists(self):
        missing = sorted(path for path in _literals() if PATH.match(path)
                         and not os.path.exists(os.path.join(TOP, path)))
        self.assertEqual([], missing)

    def test_every_shorter_path_exists(self):
        missing = sorted(
            path for path in _literals()
            if RELATIVE.match(path) and not PATH.match(path)
            and not any(os.path.exists(os.path.join(TOP, base, path))
                        for base in BASES))
        self.assertEqual([], missing)

    def test_every_module_and_function_exists(self):
        missing = []
        groups = _entry_point_groups()
        for name in sorted(x for x in _literals() if DOTTED.match(x)
                           and x not in groups):
            try:
                resolve(name)
            except (ImportError, AttributeError):
                missing.append(name)
        self.assertEqual([], missing)

    def test_a_missing_name_is_found(self):
        self.assertRaises(AttributeError, resolve,
                          'cyborg.conductor.reporting.no_such_function')
        self.assertRaises(ImportError, resolve, 'cyborgx.nothing')
