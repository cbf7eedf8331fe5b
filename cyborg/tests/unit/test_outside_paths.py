"""Nothing in ``cyborg/`` or ``tools/`` reaches out of the repository
into the workspace around it (``../shared/``, the upstream reference kit,
the constraints): a clone builds, runs and passes its tests alone. Docs
and comments may say where such a thing is; code, configuration and
data may not name it. A benchmark that needs the upstream reference
takes its directory by ``--ref-dir`` or ``$REF``
(``tools/bench/upstreamref.py``)."""

import ast
import os
import re

import testtools

from cyborg.tests.unit import test_hygiene

TOP = test_hygiene.TOP
TREES = ('cyborg', 'tools')
OUTSIDE = re.compile(r'(?:\.\./)+shared\b|/work/shared\b')
#: Documentation: what it says is not run.
DOC_SUFFIXES = ('.rst', '.md')
#: Files that may name such a path in code, each with why.
ALLOWED = {
    'cyborg/tests/unit/test_outside_paths.py':
        'the patterns this test looks for',
    'cyborg/tests/functional/test_doc_commands.py':
        "names benchmarks.rst's command that starts the reference, to "
        'skip it; it runs nothing from there',
}


def _docstrings(tree):
    """The ids of the string constants that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr)
                    and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                found.add(id(first.value))
    return found


def python_hits(text):
    """Line numbers of the string constants of Python ``text`` (not its
    docstrings; comments are no constants) that name an outside path,
    also as the parts of one ``os.path.join('..', 'shared')``."""
    tree = ast.parse(text)
    docstrings = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings
                and OUTSIDE.search(node.value)):
            hits.append(node.lineno)
        elif isinstance(node, ast.Call):
            parts = [arg.value for arg in node.args
                     if isinstance(arg, ast.Constant)]
            if '..' in parts and 'shared' in parts:
                hits.append(node.lineno)
    return hits


def text_hits(text):
    """Line numbers of the lines of ``text`` (a shell script, a
    configuration or data file) that name an outside path outside a
    ``#`` comment."""
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split(' #', 1)[0]
        if code.lstrip().startswith('#'):
            continue
        if OUTSIDE.search(code):
            hits.append(number)
    return hits


def is_python(path, text):
    return path.endswith('.py') or (
        text.startswith('#!') and 'python' in text.split('\n', 1)[0])


def hits(path, text):
    if path.endswith(DOC_SUFFIXES):
        return []
    if is_python(path, text):
        return python_hits(text)
    return text_hits(text)


def tree_files():
    for tree in TREES:
        for root, dirs, files in os.walk(os.path.join(TOP, tree)):
            dirs[:] = [d for d in dirs if d != '__pycache__'
                       and not d.startswith('.')]
            for name in files:
                path = os.path.join(root, name)
                try:
                    with open(path, encoding='utf-8') as f:
                        text = f.read()
                except (UnicodeDecodeError, OSError):
                    continue  # binary: a chart, a capture's archive
                yield os.path.relpath(path, TOP), text


class OutsidePathsTest(testtools.TestCase):

    def test_no_code_names_a_path_outside_the_repository(self):
        found = []
        for path, text in tree_files():
            if path in ALLOWED:
                continue
            found.extend('%s:%d' % (path, line) for line in hits(path, text))
        self.assertEqual([], found)

    def test_allowed_files_still_exist(self):
        for path in ALLOWED:
            self.assertTrue(os.path.exists(os.path.join(TOP, path)), path)

    def test_what_counts(self):
        source = '\n'.join([
            '"""Start it with ../shared/reference/ref-up.sh."""',
            '# ../shared/reference/ is where the kit is',
            "REF = '../shared/reference'",
            "KIT = os.path.join(TOP, '..', 'shared', 'reference')",
            "ok = '../sharedness'",
            "def f():",
            '    """See /work/shared/STYLE.md."""',
            "    return f'{TOP}/../shared/x'",
        ])
        self.assertEqual([3, 4, 8], sorted(python_hits(source)))
        script = '\n'.join([
            '#!/bin/bash',
            '# bash ../shared/reference/ref-up.sh',
            'bash ../shared/reference/ref-up.sh',
            'pip install -c /work/shared/constraints/x.txt  # pinned',
            'echo done  # not ../shared/',
        ])
        self.assertEqual([3, 4], text_hits(script))
        self.assertEqual([], hits('doc/x.rst', 'bash ../shared/ref-up.sh'))
