"""The scripts of tools/bench/, loaded in a test's process."""

import importlib.machinery
import importlib.util
import os
import sys
from unittest import mock

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BENCH = os.path.join(TOP, 'tools', 'bench')


def load(filename):
    """``tools/bench/<filename>`` as a module (a new one each call), the
    modules it imports from tools/bench/ found there."""
    loader = importlib.machinery.SourceFileLoader(
        'bench_' + filename.replace('.', '_'), os.path.join(BENCH, filename))
    module = importlib.util.module_from_spec(
        importlib.util.spec_from_loader(loader.name, loader))
    with mock.patch.object(sys, 'path', [BENCH] + sys.path):
        loader.exec_module(module)
    return module
