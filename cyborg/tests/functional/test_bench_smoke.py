"""Every script of tools/bench/ runs in CI once, at the smallest size that
takes each of its paths (test_benchmarks.py and test_bench_scale.py hold
the others' runs, this file those of idle, lists and upstream_storm), and
every command that doc/source/admin/benchmarks.rst names exists with the
options it gives. The tests check counts, never timings; the real runs
are in the documentation."""

import contextlib
import importlib.machinery
import importlib.util
import io
import os
import re
import subprocess
import sys
import shutil
import unittest.mock

import fixtures
import testtools

from cyborg.tests.functional.test_benchmarks import run_bench
from cyborg.tests import services

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))
BENCH = os.path.join(TOP, 'tools', 'bench')
DOC = os.path.join(TOP, 'doc', 'source', 'admin', 'benchmarks.rst')

#: Each script of tools/bench/ and the test that runs it at a small size.
#: A new script fails BenchScriptsTest until it is named here.
SMOKE_TESTS = {
    'agent': 'test_benchmarks.AgentBenchmarkTest',
    # Drawn from scrapes; its --drive is scale's run with metrics on.
    'dashboard': 'cyborg.tests.unit.test_metrics.DashboardTest',
    'api': 'test_benchmarks.APIBenchmarkTest',
    'heartbeats': 'test_benchmarks.HeartbeatBenchmarkTest',
    'idle': 'test_bench_smoke.IdleBenchmarkTest',
    'lists': 'test_bench_smoke.ListsBenchmarkTest',
    'metrics_cost': 'test_bench_smoke.MetricsCostBenchmarkTest',
    'placement_costs': 'test_benchmarks.PlacementCostsBenchmarkTest',
    'report_storm': 'test_benchmarks.ReportStormBenchmarkTest',
    'scale': 'test_bench_scale.SmallRunTest',
    # It runs with upstream's cyborg only (its reference virtualenv),
    # which tests never use: its help and its refusal are checked.
    'upstream_storm': 'test_bench_smoke.UpstreamStormTest',
}


def bench_scripts():
    """The scripts of tools/bench/ (not its modules)."""
    return sorted(name for name in os.listdir(BENCH)
                  if not name.endswith('.py') and not name.startswith('.')
                  and os.path.isfile(os.path.join(BENCH, name)))


class IdleBenchmarkTest(testtools.TestCase):

    def upstream_dir(self):
        """A reference directory whose daemons are three ``sleep``
        processes: the --upstream path without upstream."""
        ref = self.useFixture(fixtures.TempDir()).path
        os.mkdir(os.path.join(ref, 'run'))
        for name in ('api', 'conductor', 'agent'):
            process = subprocess.Popen(['sleep', '300'])
            self.addCleanup(process.wait)
            self.addCleanup(process.kill)
            with open(os.path.join(ref, 'run', 'cyborg-%s.pid' % name),
                      'w') as f:
                f.write('%d\n' % process.pid)
        return ref

    def test_small_run_of_every_daemon(self):
        # The documented command, small: the split daemons with their
        # keys on SQLite and RabbitMQ, the all-in-one, and a reference's
        # daemons measured beside them.
        transport = services.require(self, 'rabbit')
        numbers = run_bench(self, 'idle', '--seconds', '2', '--settle', '0',
                            '--transport-url', transport, '--upstream',
                            '--ref-dir', self.upstream_dir())
        self.assertEqual(('sqlite', 'rabbit', 1, 2.0), (
            numbers['database'], numbers['transport'],
            numbers['api_workers'], numbers['seconds']))
        daemons = ('api', 'conductor', 'agent', 'aio', 'upstream-api',
                   'upstream-conductor', 'upstream-agent')
        self.assertEqual(set(daemons), set(numbers) - {
            'api_workers', 'database', 'seconds', 'transport'})
        for name in daemons:
            result = numbers[name]
            self.assertEqual({'processes', 'threads', 'cpu_s_per_min',
                              'rss_mib', 'pss_mib'}, set(result), name)
            # One process each ([api] api_workers = 1).
            self.assertEqual(1, result['processes'], name)
            self.assertGreaterEqual(result['threads'], 1, name)
            self.assertGreaterEqual(result['rss_mib'], result['pss_mib'],
                                    name)
            self.assertGreater(result['pss_mib'], 0, name)
            self.assertGreaterEqual(result['cpu_s_per_min'], 0, name)


class ListsBenchmarkTest(testtools.TestCase):

    def test_small_run_on_mariadb(self):
        database = services.require(self, 'mysql')
        numbers = run_bench(self, 'lists', '--deployables', '25', '--arqs',
                            '12', '--repeat', '1', '--limit', '10',
                            '--db-url', database)
        self.assertEqual((25, 12, 'mysql'), (
            numbers['deployables'], numbers['arqs'], numbers['db']))
        ours = numbers['ours']
        # Pages of 10: every item walked, the last page's 5 and 2.
        self.assertEqual((25, 3), (ours['deployables']['items'],
                                   ours['deployables']['pages']))
        self.assertEqual((12, 2), (ours['accelerator_requests']['items'],
                                   ours['accelerator_requests']['pages']))
        self.assertEqual(10, ours['deployables']['page_items'])
        for name in ('deployables', 'accelerator_requests'):
            self.assertGreater(ours[name]['statements_per_page'], 0, name)
        self.assertGreater(ours['hardware']['items'], 0)
        self.assertTrue(ours['order_by'])
        self.assertNotIn('upstream', numbers)


class MetricsCostBenchmarkTest(testtools.TestCase):

    def test_small_run_each_way(self):
        # One round each way of the in-process stack on SQLite: the runs
        # with metrics off really have none (no statement counts).
        numbers = run_bench(self, 'metrics_cost', '--rounds', '1',
                            '--server', 'in-process', '--deployables', '4',
                            '--cycles', '4', '--concurrency', '2')
        self.assertEqual((1, 'in-process'), (numbers['rounds'],
                                              numbers['server']))
        self.assertEqual([None], numbers['off']['statements_per_boot'])
        [counted] = numbers['on']['statements_per_boot']
        self.assertGreater(counted, 0)
        for way in ('on', 'off'):
            self.assertGreater(numbers[way]['p50_ms'], 0, way)
            self.assertGreater(numbers[way]['boots_per_s'], 0, way)
            self.assertGreater(numbers[way]['cpu_ms_per_boot'], 0, way)
        self.assertEqual({'p50_pct', 'boots_per_s_pct', 'cpu_per_boot_pct'},
                         set(numbers['cost']))


class UpstreamStormTest(testtools.TestCase):

    def test_needs_upstream(self):
        # With this project's Python it says what to run it with.
        result = subprocess.run(
            [sys.executable, os.path.join(BENCH, 'upstream_storm'),
             '--hosts', '1'], capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL)
        self.assertEqual(1, result.returncode, result.stdout + result.stderr)
        self.assertIn('venv-cyborg', result.stderr)


class UpstreamReferenceTest(testtools.TestCase):
    """Each mode that reads the upstream reference's directory, without
    one: one line saying how to get it, exit status 2, before anything
    of ours starts."""

    def test_each_mode_without_the_reference(self):
        missing = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'no-ref')
        for command in (['idle', '--upstream'],
                        ['scale', '--upstream', '--hosts', '1'],
                        ['report_storm', '--target-upstream']):
            result = subprocess.run(
                [sys.executable, os.path.join(BENCH, command[0])]
                + command[1:] + ['--ref-dir', missing],
                capture_output=True, text=True, timeout=120,
                stdin=subprocess.DEVNULL)
            self.assertEqual(2, result.returncode,
                             result.stdout + result.stderr)
            lines = result.stderr.strip().splitlines()
            self.assertEqual(1, len(lines), result.stderr)
            self.assertIn(missing, lines[0])
            self.assertIn('ref-up.sh', lines[0])
            self.assertIn('--ref-dir', lines[0])


# -- the scripts and their documentation ---------------------------------

def documented_commands(text):
    """``(script, [options])`` of every ``tools/bench/<script> ...``
    command in ``text`` (reStructuredText): in literal blocks, with their
    continuation lines, and in inline literals, which may span lines."""
    commands = []
    joined = re.sub(r'\\\n\s*', ' ', text)
    for line in joined.splitlines():
        match = re.match(r'\s+(?:\S*python\S* )?tools/bench/(\w+)(?![\w.])'
                         r'(.*)$', line)
        if match:
            commands.append((match.group(1), match.group(2)))
    for literal in re.findall(r'``(tools/bench/.+?)``', text, re.S):
        match = re.match(r'tools/bench/(\w+)(?![\w.])(.*)$', literal, re.S)
        if match:  # not a module, such as pngchart.py
            commands.append((match.group(1), match.group(2)))
    return [(script, re.findall(r'(?<!\S)(--[a-z][a-z0-9-]*)', rest))
            for script, rest in commands]


def help_text(script):
    """``tools/bench/<script> --help``, run in this process (the scripts
    would each take seconds to import cyborg again)."""
    path = os.path.join(BENCH, script)
    loader = importlib.machinery.SourceFileLoader('bench_help_' + script,
                                                  path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    out = io.StringIO()
    with unittest.mock.patch.object(sys, 'argv', [path, '--help']), \
            unittest.mock.patch.object(sys, 'path', list(sys.path)), \
            contextlib.redirect_stdout(out):
        loader.exec_module(module)
        try:
            module.main()
        except SystemExit as e:
            if e.code not in (0, None):
                raise
    return out.getvalue()


def sections(text):
    """``(title, body)`` of each section of ``text``."""
    lines = text.splitlines()
    found, title, body = [], '', []
    for index, line in enumerate(lines):
        under = lines[index + 1] if index + 1 < len(lines) else ''
        if (line.strip() and re.fullmatch(r'([=~-])\1{3,}', under)
                and len(under) >= len(line.rstrip())
                and not re.fullmatch(r'[=\s-]+', line)):
            found.append((title, '\n'.join(body)))
            title, body = line, []
        body.append(line)
    found.append((title, '\n'.join(body)))
    return found


class BenchScriptsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        with open(DOC) as f:
            self.doc = f.read()

    def test_every_script_has_a_smoke_test(self):
        self.assertEqual(sorted(SMOKE_TESTS), bench_scripts())

    def test_the_parser_of_documented_commands(self):
        text = ('Run it::\n\n    .venv/bin/python tools/bench/idle '
                '--seconds 120 \\\n        --db-url mysql://x\n\n'
                'Later (``tools/bench/api --split --lists 0\n--cycles '
                '150``), ``tools/bench/agent`` and its charts\' module '
                '``tools/bench/pngchart.py``.\n')
        self.assertEqual([('idle', ['--seconds', '--db-url']),
                          ('api', ['--split', '--lists', '--cycles']),
                          ('agent', [])], documented_commands(text))

    def test_documented_commands_exist_with_their_options(self):
        commands = documented_commands(self.doc)
        self.assertGreater(len(commands), 20)
        scripts = bench_scripts()
        helps = {}
        for script, options in commands:
            self.assertIn(script, scripts)
            if script not in helps:
                helps[script] = help_text(script)
            for option in options:
                self.assertIn(option, helps[script],
                              'tools/bench/%s has no %s' % (script, option))

    def test_every_table_names_its_command(self):
        # A section with figures in a table says what produced them.
        for title, body in sections(self.doc):
            if re.search(r'^=+( +=+)+$', body, re.M):
                self.assertRegex(body, r'tools/(bench/\w+|nova-e2e)',
                                 'section %r' % title)

    def test_scripts_are_ruff_clean(self):
        # "ruff check tools" skips files without .py: name them.
        ruff = (shutil.which('ruff', path=os.path.dirname(sys.executable))
                or shutil.which('ruff'))
        self.assertIsNotNone(ruff, 'ruff is in test-requirements.txt')
        paths = [os.path.join('tools', 'bench', s) for s in bench_scripts()]
        result = subprocess.run([ruff, 'check', 'tools'] + paths, cwd=TOP,
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
