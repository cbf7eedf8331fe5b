"""Every command the documentation shows (``doc/`` and README), run
against an all-in-one, so that a page cannot drift from the product.

``doc_commands`` reads the commands from the rst source. Each page's
commands run in order in one bash, as a reader types them: what one
exports, the next one sees. Before that the shell has the setup the
pages assume: ``$CYBORG``, ``$TOKEN``, ``OS_ENDPOINT`` and, from
``doc/source/user/clients.rst``, its ``clouds.yaml`` as it is written
(only the port changes to the test's all-in-one) with ``OS_CLOUD``
naming its cloud. ``http://127.0.0.1:6666`` in a command becomes the
test's all-in-one too.

A command passes when it exits 0, or when it fails with an answer of
the API (``HTTP 4xx``: the example names a host or uuid this all-in-one
does not have) or is listed in ``MAY_FAIL``; and in any case when
nothing in its output says that the command line itself is wrong (an
unknown command or option, a usage message, a deprecation) or that the
path it asks for does not exist in the API.

A command that cannot run here is listed in ``SKIPS`` by page and
command (its start), with why. A new command that is neither runnable
nor listed fails the test, as does a listed one that is gone.
"""

from concurrent import futures
from importlib import metadata
import os
import re
import subprocess
import sys
import tempfile

import fixtures
import testtools
import yaml

from cyborg.cli import app as cli_app
from cyborg.tests.functional import clients
from cyborg.tests.functional import doc_commands

DOC_ENDPOINT = 'http://127.0.0.1:6666'
CLIENTS_PAGE = 'doc/source/user/clients.rst'
BIN = os.path.dirname(sys.executable)

PRODUCTION_PAGE = 'doc/source/install/production.rst'
PRODUCTION = 'production host only: root, /etc/cyborg, systemd, services'
#: The guide's database, key and broker steps run in their own test.
GUIDE = 'run by test_production_guide against MariaDB and RabbitMQ'
BENCHMARK = 'a benchmark: minutes of load against real services'
NOVA = 'needs Nova (and Neutron or Glance), which the all-in-one has not'
HARDWARE = 'reads or programs hardware this machine does not have'

# (page, start of the command): why it does not run here.
SKIPS = {
    ('README.rst', 'tools/aio'):
        'starts an all-in-one on port 6666; the test runs its own',
    ('README.rst', 'tools/run-tests'):
        'the whole test suite, this test included',
    ('doc/source/contributor/index.rst',
     'CYBORG_CONSTRAINTS=tools/lib/constraints/upper-constraints-2026.1.txt '
     'tools/run-tests'):
        'the whole test suite, this test included, in another virtualenv',
    ('doc/source/admin/accelerators-v1.rst', 'tools/aio'):
        'starts an all-in-one on port 6666; the test runs its own',
    ('doc/source/admin/security.rst',
     'cyborg-status keys broker --config-file cyborg.conf'):
        "reads a conductor host's cyborg.conf (its transport_url's vhost)",
    ('doc/source/admin/security.rst', 'cyborg-status keys create'):
        "writes keys into a conductor host's key_dir (/etc/cyborg/keys)",
    ('doc/source/admin/benchmarks.rst', 'tools/bench/'): BENCHMARK,
    ('doc/source/admin/metrics.rst', '.venv/bin/python tools/bench/'):
        BENCHMARK,
    ('doc/source/admin/benchmarks.rst', '.venv/bin/python tools/bench/'):
        BENCHMARK,
    ('doc/source/admin/benchmarks.rst', '.venv/bin/pip install uwsgi'):
        'installs into the shared virtualenv',
    ('doc/source/admin/benchmarks.rst', 'mysql -uroot'):
        'creates databases for the upstream reference benchmark',
    ('doc/source/admin/benchmarks.rst', 'REF_RESET=1'):
        'installs upstream cyborg for the reference benchmark',
    ('doc/source/admin/benchmarks.rst', '~/cyborg-ref/'): BENCHMARK,
    ('doc/source/admin/benchmarks.rst', 'bash ../shared/reference/ref-up.sh'):
        'starts upstream cyborg for the reference benchmark',
    ('doc/source/admin/benchmarks.rst', 'CYBORG_NOVA_E2E_KEEP=1'):
        'tools/nova-e2e: installs and runs a real Nova',
    ('doc/source/admin/cli.rst', 'cyborg uninstall-driver fake_driver'):
        'destructive: takes away the driver of the all-in-one that the '
        'other pages use',
    ('doc/source/admin/drivers.rst', 'ls /sys/'): HARDWARE,
    ('doc/source/admin/drivers.rst', 'cat /sys/'): HARDWARE,
    ('doc/source/admin/drivers.rst', '/usr/lib/nvidia/sriov-manage'):
        HARDWARE,
    ('doc/source/admin/fpga-drivers.rst', 'fpgaconf'): HARDWARE,
    ('doc/source/admin/fpga-drivers.rst', 'xbmgmt'): HARDWARE,
    ('doc/source/admin/nic-driver.rst', 'openstack port create'): NOVA,
    ('doc/source/admin/nic-driver.rst', 'openstack server create'): NOVA,
    ('doc/source/admin/programming.rst', 'openstack image create'): NOVA,
    ('doc/source/admin/programming.rst', 'curl -X PATCH'):
        'a shortened URL (".../v2/deployables/<uuid>/program") and an '
        'image in Glance',
    ('doc/source/admin/troubleshooting.rst',
     'cyborg-agent --config-file /etc/cyborg/cyborg.conf --capture'):
        PRODUCTION,
    ('doc/source/admin/troubleshooting.rst', 'cyborg-aio --sysfs-root'):
        'starts an all-in-one on port 6666 from a capture a user sent; '
        'the test runs its own',
    ('doc/source/admin/upgrades.rst', 'cyborg-dbsync'): PRODUCTION,
    ('doc/source/admin/upgrades.rst', 'cyborg-status'): PRODUCTION,
    ('doc/source/configuration/index.rst', 'tox -e genconfig'):
        'what test_docs.SamplesTest runs (the generator)',
    ('doc/source/configuration/index.rst', 'tox -e genpolicy'):
        'what test_docs.SamplesTest runs (the generator)',
    ('doc/source/contributor/index.rst', 'tools/run-tests'):
        'the whole test suite, this test included',
    ('doc/source/contributor/index.rst', 'tools/peer-suite'):
        'installs Keystone and the upstream tempest plugin',
    ('doc/source/contributor/index.rst', 'reno new'):
        'writes a release note into the tree',
    ('doc/source/contributor/nova-e2e.rst', 'tools/nova-e2e'):
        'installs and runs a real Nova',
    ('doc/source/contributor/releasing.rst', 'git tag'):
        'tags and publishes a release',
    ('doc/source/install/all-in-one.rst', 'tools/aio'):
        'starts an all-in-one on port 6666; the test runs its own',
    ('doc/source/admin/tracing.rst', 'openstack --os-profile'): NOVA,
    ('doc/source/admin/reference-deployment.rst', 'rabbitmqctl'):
        "the policy of the page's cluster, on its vhost: "
        'test_reference_deployment applies it to its own nodes; here it '
        'would reshape the shared broker',
    ('doc/source/admin/rabbitmq-cluster.rst', 'rabbitmqctl'):
        "a cluster's nodes only; test_rabbit_cluster checks the lines "
        'against cyborg-status keys broker and clusters its own nodes',
    (PRODUCTION_PAGE, 'python3 -m venv /opt/'): PRODUCTION,
    (PRODUCTION_PAGE, '/opt/cyborg/bin/pip'): PRODUCTION,
    (PRODUCTION_PAGE, 'install -d'): PRODUCTION,
    (PRODUCTION_PAGE, 'cp etc/'): PRODUCTION,
    (PRODUCTION_PAGE, 'cyborg-dbsync'): GUIDE,
    (PRODUCTION_PAGE, 'openstack user create'): PRODUCTION,
    (PRODUCTION_PAGE, 'openstack role add'): PRODUCTION,
    (PRODUCTION_PAGE, 'openstack service create'): PRODUCTION,
    (PRODUCTION_PAGE, 'openstack endpoint create'): PRODUCTION,
    (PRODUCTION_PAGE, 'cyborg-status'): GUIDE,
    (PRODUCTION_PAGE, 'useradd'): PRODUCTION,
    (PRODUCTION_PAGE, 'chgrp'): PRODUCTION,
    (PRODUCTION_PAGE, 'systemctl'): PRODUCTION,
    ('doc/source/user/flavors.rst', 'openstack flavor'): NOVA,
    ('doc/source/user/flavors.rst', 'openstack server create'): NOVA,
    ('doc/source/user/flavors.rst', 'openstack --os-compute-api-version'):
        NOVA,
    ('doc/source/user/flavors.rst', 'openstack resource provider'):
        'needs osc-placement and a server Nova booted',
    ('doc/source/user/flavors.rst', 'openstack accelerator arq show'):
        'needs the ARQ of a server Nova booted',
    ('doc/source/user/smartnic.rst', 'openstack port'): NOVA,
    ('doc/source/user/smartnic.rst', 'openstack server create'): NOVA,
    ('doc/source/user/vgpu.rst', 'openstack flavor'): NOVA,
    ('doc/source/user/vgpu.rst', 'openstack server create'): NOVA,
}

# (page, start of the command): why it may exit non-zero without an API
# error in its output.
MAY_FAIL = {
    ('doc/source/admin/accelerators-v1.rst',
     'curl -s -o /dev/null -D - -H "$AUTH" $CYBORG/v1/accelerators/$U'):
        'grep finds no ETag: the example uuid is not in this all-in-one',
}

# Placeholders of the pages, and what the test puts in their place.
PLACEHOLDERS = {
    '<uuid>': 'device_uuid',
    '<rp_uuid>': 'rp_uuid',
}

# What says that a command line, not the example's data, is wrong.
DRIFT = re.compile(
    r'command not found|usage: |invalid choice|unrecognized arguments|'
    r'Unknown command|deprecated|The resource could not be found|'
    r'Traceback|No such file or directory', re.IGNORECASE)
API_ERROR = re.compile(r'HTTP 4\d\d|\b4\d\d (Client Error|Not Found|'
                       r'Conflict|Bad Request|Forbidden)')


def listed(table, command):
    """The entry of ``table`` for ``command``, or None."""
    for (page, start), why in table.items():
        if page == command.page and command.text.startswith(start):
            return why
    return None


def search_path():
    return BIN + os.pathsep + os.environ.get('PATH', '')


class DocCommandsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.aio = self.useFixture(clients.AllInOne(self))
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.commands = doc_commands.commands(path=search_path())
        self.assertGreater(len(self.commands), 100)

    def values(self):
        device = self.aio.api('GET', '/v2/devices').json()['devices'][0]
        return {'device_uuid': device['uuid'],
                'rp_uuid': self.aio.deployables[0]['rp_uuid']}

    def clouds_yaml(self):
        """The page's ``clouds.yaml`` with the test's port; and the name
        of its cloud."""
        with open(os.path.join(doc_commands.TOP, CLIENTS_PAGE)) as f:
            blocks = [lines for _line, language, lines
                      in doc_commands.literal_blocks(f.read())
                      if language == 'yaml']
        [block] = blocks
        text = '\n'.join(block).replace(DOC_ENDPOINT, self.aio.base)
        [cloud] = yaml.safe_load(text)['clouds']
        path = os.path.join(self.tmp, 'clouds.yaml')
        with open(path, 'w') as f:
            f.write(text)
        return path, cloud

    def environment(self):
        clouds, cloud = self.clouds_yaml()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_')}
        env.update(PATH=search_path(), HOME=self.tmp,
                   PYTHONWARNINGS='ignore', CYBORG=self.aio.base,
                   TOKEN='admin', OS_ENDPOINT=self.aio.base,
                   OS_CLIENT_CONFIG_FILE=clouds, OS_CLOUD=cloud)
        return env

    def script(self, commands, values, out):
        """One bash script running ``commands`` in order, each one's
        output and exit status in files under ``out``."""
        lines = []
        for index, command in enumerate(commands):
            text = command.text.replace(DOC_ENDPOINT, self.aio.base)
            for placeholder, name in PLACEHOLDERS.items():
                text = text.replace(placeholder, values[name])
            lines.append('{\n%s\n} >%s/%d.out 2>&1 </dev/null\n'
                         'echo $? >%s/%d.rc' % (text, out, index, out, index))
        return '\n'.join(lines) + '\n'

    def run_page(self, page, commands, values, env):
        out = tempfile.mkdtemp(dir=self.tmp)
        subprocess.run(['bash', '-c', self.script(commands, values, out)],
                       cwd=doc_commands.TOP, env=env, timeout=300,
                       capture_output=True)
        problems = []
        for index, command in enumerate(commands):
            problem = self.check(command, out, index)
            if problem:
                problems.append(problem)
        return problems

    def check(self, command, out, index):
        try:
            with open('%s/%d.rc' % (out, index)) as f:
                rc = int(f.read())
            with open('%s/%d.out' % (out, index)) as f:
                output = f.read()
        except (OSError, ValueError):
            return '%s:%d: never ran: %s' % (command.page, command.line,
                                              command.text)
        drift = DRIFT.search(output)
        failed = rc != 0 and not API_ERROR.search(output) and not listed(
            MAY_FAIL, command)
        if drift or failed:
            return '%s:%d: %s\nexit %d: %s' % (
                command.page, command.line, command.text, rc,
                output[-1500:])
        return None

    def test_every_command(self):
        """One test, so that the all-in-one starts once."""
        runnable = {}
        # The pages' ``openstack accelerator`` commands are
        # python-openstackclient's, from 10; with 9 (the pin of OpenStack
        # 2026.1) openstack runs python-cyborgclient's, whose arguments
        # differ (see test_osc.py): they are left out then.
        osc_commands = any(
            point.dist.name == 'python-openstackclient'
            for point in metadata.entry_points(
                group='openstack.accelerator.v2'))
        for command in self.commands:
            if not osc_commands and command.text.startswith(
                    'openstack accelerator'):
                continue
            if listed(SKIPS, command) is None:
                runnable.setdefault(command.page, []).append(command)
        values, env = self.values(), self.environment()
        self.check_clouds_yaml(env)
        with futures.ThreadPoolExecutor(4) as pool:
            results = pool.map(
                lambda page: self.run_page(page, runnable[page], values, env),
                sorted(runnable))
            problems = [problem for page in results for problem in page]
        self.assertEqual([], problems, '\n\n'.join(problems))
        ran = sum(len(page) for page in runnable.values())
        self.assertGreater(ran, 60)

    def check_clouds_yaml(self, env):
        """The ``clouds.yaml`` of the clients page, as it is written (the
        port aside), points ``openstack accelerator`` at the all-in-one
        as its administrator."""
        result = subprocess.run(
            ['openstack', '--os-cloud', env['OS_CLOUD'], 'accelerator',
             'deployable', 'list', '-f', 'yaml'], capture_output=True,
            text=True, env=env, timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(
            [d['uuid'] for d in self.aio.deployables],
            [row['uuid'] for row in yaml.safe_load(result.stdout)])


class SkipsTest(testtools.TestCase):

    def test_skips_are_current(self):
        """Every entry of SKIPS and MAY_FAIL still names a command."""
        commands = doc_commands.commands(path=search_path())
        for table in (SKIPS, MAY_FAIL):
            for page, start in table:
                self.assertTrue(
                    [c for c in commands if c.page == page
                     and c.text.startswith(start)],
                    'no command of %s starts with %r' % (page, start))


def cyborg_commands():
    return {name for family in cli_app.FAMILIES for name in family.COMMANDS}


def accelerator_commands():
    """The ``openstack accelerator`` commands, as word tuples."""
    return {tuple(point.name.split('_')[1:]) for point in
            metadata.entry_points(group='openstack.accelerator.v2')}


def _words(text):
    """The command words of an inline command: up to the first option,
    placeholder (``<name>``, ``NAME``, ``...``) or glob."""
    words = []
    for word in text.split()[1:]:
        if word.startswith(('-', '<')) or word.isupper() or '.' in word:
            break
        words.append(word)
    return words


class InlineCommandsTest(testtools.TestCase):
    """Prose that names a command names one that exists: ``cyborg
    device-list`` (there is none) once sent readers astray."""

    def unknown(self, text):
        """Why ``text`` names no command; None if it names one."""
        words = _words(text.replace('openstack accelerator', 'accelerator'))
        if not words:
            return None
        if text.startswith('cyborg'):
            name = words[0]
            if name.endswith('*'):
                known = any(c.startswith(name[:-1]) for c in cyborg_commands())
            else:
                known = name in cyborg_commands() | {'help'}
            return None if known else 'no cyborg command %r' % name
        known = tuple(words) in accelerator_commands()
        return None if known else 'no openstack command %r' % ' '.join(
            ['accelerator'] + words)

    def test_inline_commands_exist(self):
        found = doc_commands.inline_commands()
        self.assertGreater(len(found), 20)
        problems = ['%s: ``%s``: %s' % (page, text, self.unknown(text))
                    for page, text in found if self.unknown(text)]
        self.assertEqual([], problems, '\n'.join(problems))

    def test_a_wrong_name_is_found(self):
        self.assertEqual("no cyborg command 'device-list'",
                         self.unknown('cyborg device-list'))
        self.assertEqual("no openstack command 'accelerator device "
                         "lists'",
                         self.unknown('openstack accelerator device lists'))
        self.assertIsNone(self.unknown('cyborg service-list --host HOST'))
        self.assertIsNone(self.unknown(
            'openstack accelerator device profile show <name>'))
