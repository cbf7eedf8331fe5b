"""requirements.txt names every library whose private names cyborg uses,
capped below its next major version, with the reason on its line: a new
major release may rename what we reach into, so it comes in as a
reviewed change of the cap, never by surprise at install time."""

import ast
from importlib import metadata
import os
import re

from packaging import requirements
from packaging import utils
import testtools

from cyborg.tests.unit import test_hygiene

TOP = test_hygiene.TOP
REQUIREMENTS = os.path.join(TOP, 'requirements.txt')

#: Distribution: (its top-level module, what of it cyborg uses that its
#: authors may change in any release).
PRIVATE_USERS = {
    'oslo.messaging': ('oslo_messaging',
                       'oslo_messaging._drivers (the RabbitMQ driver\'s '
                       'connection and pool, the in-memory driver), '
                       'Transport._driver and _send, '
                       'RPCDispatcher._do_dispatch and '
                       'server._executor_cls (compat/oslo_messaging.py)'),
    'amqp': ('amqp', 'TCPTransport._read, _setup_transport, _read_buffer, '
                     '_quick_recv (compat/amqp.py)'),
    'kombu': ('kombu', "subclasses of kombu.transport.pyamqp's Transport "
                       'and Connection (common/heartbeats.py)'),
    'cheroot': ('cheroot', 'the connection reader\'s _read_buf and '
                           '_read_pos (compat/cheroot.py)'),
    'PyMySQL': ('pymysql', 'Connection._create_ssl_ctx (compat/pymysql.py)'),
    'SQLAlchemy': ('sqlalchemy',
                   'engine.pool._pre_ping (compat/sqlalchemy.py)'),
    'osprofiler': ('osprofiler', "the OpenTelemetry driver's spans, "
                                 'replaced (compat/osprofiler.py)'),
    'pecan': ('pecan', 'pecan.core.getargspec, replaced (compat/pecan.py)'),
    'oslo.middleware': ('oslo_middleware',
                        'ConfigurableMiddleware._conf_get '
                        '(compat/oslo_middleware.py)'),
    'oslo.config': ('oslo_config', 'ConfigOpts._namespace, its _parsed '
                                   'and _sections_to_file, '
                                   'generator._list_opts '
                                   '(compat/oslo_config.py)'),
    'prometheus-client': ('prometheus_client',
                          'values.ValueClass, chosen again for the API '
                          "workers' multiprocess mode (compat/prometheus.py)"),
}

#: Top-level modules whose private names only the tests use, with which:
#: a new release breaks a test, not the service, so no cap.
TESTS_ONLY = {
    'openstack': 'openstack.accelerator.v2._proxy, the client whose '
                 'requests tests/functional/test_clients.py checks',
}


def read_requirements():
    """{canonical name: (Requirement, comment)} of requirements.txt."""
    found = {}
    with open(REQUIREMENTS) as f:
        for line in f:
            text, _, comment = line.partition('#')
            if not text.strip():
                continue
            requirement = requirements.Requirement(text.strip())
            found[utils.canonicalize_name(requirement.name)] = (
                requirement, comment.strip())
    return found


def _is_private(name):
    return name.startswith('_') and not name.startswith('__')


def private_imports(source):
    """Top-level modules of the ``import a._b`` and ``from a import _b``
    statements of Python ``source``."""
    modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and \
                not node.level:
            names = [node.module + '.' + alias.name
                     for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split('.')
            if any(_is_private(part) for part in parts[1:]):
                modules.add(parts[0])
    return modules


class RequirementsTest(testtools.TestCase):

    def test_each_private_user_is_capped_with_a_reason(self):
        found = read_requirements()
        for name in PRIVATE_USERS:
            key = utils.canonicalize_name(name)
            self.assertIn(key, found, '%s is not in requirements.txt' % name)
            requirement, comment = found[key]
            caps = [spec for spec in requirement.specifier
                    if spec.operator == '<']
            self.assertEqual(1, len(caps), '%s has no "<" cap' % name)
            # Below a major version: "<N" or "<N.0".
            self.assertRegex(caps[0].version, r'^\d+(\.0)*$', name)
            self.assertTrue(comment, '%s: no reason on its line' % name)

    def test_the_installed_versions_are_within_the_caps(self):
        found = read_requirements()
        for name in PRIVATE_USERS:
            requirement, _comment = found[utils.canonicalize_name(name)]
            version = metadata.version(name)
            self.assertTrue(requirement.specifier.contains(version),
                            '%s %s is outside %s: check what cyborg uses '
                            'of it, then move the cap' % (
                                name, version, requirement.specifier))

    def test_every_library_imported_privately_is_listed(self):
        listed = {module for module, _why in PRIVATE_USERS.values()}
        tests = os.path.join(TOP, 'cyborg', 'tests', '')
        unlisted = {}
        for root, dirs, files in os.walk(os.path.join(TOP, 'cyborg')):
            dirs[:] = [d for d in dirs if d != '__pycache__']
            allowed = listed | {'cyborg'}
            if (root + os.sep).startswith(tests):
                allowed |= set(TESTS_ONLY)
            for name in files:
                if not name.endswith('.py'):
                    continue
                path = os.path.join(root, name)
                with open(path) as f:
                    modules = private_imports(f.read())
                for module in modules - allowed:
                    unlisted.setdefault(module, []).append(
                        os.path.relpath(path, TOP))
        self.assertEqual({}, unlisted)

    def test_private_imports(self):
        source = '\n'.join([
            'from oslo_messaging._drivers import base',
            'import amqp._private.x',
            'from pecan import _cfg',
            'from oslo_messaging.notify import _impl_test',
            'from cheroot import server',
            'from . import _local',
            'from os import __all__',
        ])
        self.assertEqual({'oslo_messaging', 'amqp', 'pecan'},
                         private_imports(source))

    def test_the_comments_name_no_unknown_library(self):
        # Each commented line of requirements.txt is one listed here, so
        # that the list and the file say the same.
        with open(REQUIREMENTS) as f:
            commented = {utils.canonicalize_name(re.split(r'[<>=\[ ]',
                                                          line)[0])
                         for line in f if '#' in line
                         and not line.startswith('#')}
        self.assertEqual({utils.canonicalize_name(name)
                          for name in PRIVATE_USERS}, commented)
