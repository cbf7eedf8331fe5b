"""Other libraries' private names are used in cyborg/compat only.

A name that starts with one underscore is its authors' to change in any
release. Cyborg uses some (where no public interface does the job); each
such use sits in the shim module of its library, ``cyborg/compat/<lib>.py``,
which lists them in ``PRIVATE_NAMES`` and whose test fails when the
behaviour cyborg relies on changes. This test reads every other module of
cyborg (but the tests) and fails naming ``file:line`` of each private
name of another library that it finds:

* ``import lib._mod``, ``from lib._mod import x``, ``from lib import _x``;
* ``getattr``/``setattr``/``hasattr``/``delattr`` with a literal ``'_x'``
  that cyborg does not define;
* ``obj._x`` where cyborg's own code defines no ``_x``;
* in a class built on another library's class: a ``_x`` defined, or used
  as ``self._x``, ``cls._x`` or ``super()._x``, that the library's class
  has (an attribute, or an instance attribute its code assigns).
"""

import ast
import collections
import importlib
import inspect
import os
import re
import threading

from packaging import utils
import testtools

from cyborg import compat
from cyborg.tests.unit import test_hygiene
from cyborg.tests.unit import test_requirements

TOP = test_hygiene.TOP
CYBORG = os.path.join(TOP, 'cyborg')
COMPAT = os.path.join(CYBORG, 'compat')
TESTS = os.path.join(CYBORG, 'tests')

#: Names with a leading underscore that their libraries document as
#: public (namedtuple's methods, SQLAlchemy's Row, os._exit).
DOCUMENTED = frozenset({
    '_replace', '_asdict', '_fields', '_make', '_field_defaults',
    '_mapping', '_t', '_tuple', '_exit',
})

#: Modules the scan reads but does not import, for what importing them
#: does (alembic's script runs a migration, the WSGI script builds the
#: API). They define no class (a test checks), so reading them is enough.
NOT_IMPORTED = frozenset({'cyborg.db.migrations.env', 'cyborg.wsgi.api'})

#: {module: names with a leading underscore that its documentation tells
#: a subclass to use}.
DOCUMENTED_BY = {
    # "FormattableColumn ... self._value": cliff's formatter interface.
    'cliff.columns': {'_value'},
    # "_upgrade_checks": how oslo.upgradecheck's UpgradeCommands lists
    # a project's checks.
    'oslo_upgradecheck.upgradecheck': {'_upgrade_checks'},
}

#: {private name: the cyborg module that defines it}, for the few that
#: cyborg's code reads from an object of a module it does not import.
CYBORG_ELSEWHERE = {
    # common/service.py: the conductor manager's nonce store, if any.
    '_rpc_nonces': 'cyborg.conductor.manager',
}

_ACCESSORS = ('getattr', 'setattr', 'hasattr', 'delattr')

Use = collections.namedtuple('Use', 'path line name why')


def is_private(name):
    return name.startswith('_') and not name.startswith('__')


def module_name(path):
    rel = os.path.relpath(path, TOP)[:-len('.py')]
    parts = rel.split(os.sep)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def source_files(top=CYBORG, skip=(COMPAT, TESTS)):
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__'
                         and os.path.join(root, d) not in skip)
        for name in sorted(files):
            if name.endswith('.py'):
                yield os.path.join(root, name)


def _is_self(node):
    if isinstance(node, ast.Name):
        return node.id in ('self', 'cls')
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == 'super')


def _bound_names(body):
    """The names the statements of a module or class body bind (not
    descending into functions, which bind locals)."""
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)):
            names.add(node.name)
            continue
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx,
                                                          ast.Store):
                names.add(child.id)
            elif isinstance(child, ast.alias):
                names.add(child.asname or child.name.split('.')[0])
    return names


def defined_names(tree, classes=None):
    """The private names a module's code defines that ``x._name`` can
    reach: module globals, class attributes and methods, attributes
    assigned on self or cls; not those that a class of ``classes``
    ({name: private names from other libraries}) has from another
    library's class."""
    classes = classes or {}
    names = _bound_names(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            inner = _bound_names(node.body) | {
                child.attr for child in ast.walk(node)
                if isinstance(child, ast.Attribute)
                and isinstance(child.ctx, ast.Store)
                and _is_self(child.value)}
            names |= inner - classes.get(node.name, set())
    return {name for name in names if is_private(name)}


def _external_classes(cls):
    """The classes of ``cls``'s MRO from another library (not cyborg, not
    the builtins)."""
    return [base for base in cls.__mro__[1:]
            if base.__module__.split('.')[0] not in ('cyborg', 'builtins')]


def _instance_names(cls):
    """The private attributes ``cls``'s code assigns on ``self``."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return set()
    return set(re.findall(r'self\.(_[A-Za-z0-9]\w*)\s*=[^=]', source))


def library_names(cls):
    """The private names ``cls`` has from other libraries' classes."""
    names = set()
    for base in _external_classes(cls):
        names |= {name for name in vars(base) if is_private(name)}
        names |= _instance_names(base)
        names -= DOCUMENTED_BY.get(base.__module__, set())
    return names


class _Scanner(ast.NodeVisitor):
    """The private names of other libraries one module uses.

    ``own``: the private names cyborg's code defines (then ``x._own`` is
    taken for cyborg's). ``classes``: {class name: its private names from
    other libraries}, for classes built on another library's class (from
    the imported module; empty when reading a snippet)."""

    def __init__(self, path, own, classes, internal=frozenset()):
        self.path = path
        self.own = own
        self.internal = internal
        self.classes = classes
        self.inherited = [set()]
        self.uses = []

    def add(self, node, name, why):
        self.uses.append(Use(self.path, node.lineno, name, why))

    def visit_Import(self, node):
        for alias in node.names:
            self._module(node, alias.name.split('.'))

    def visit_ImportFrom(self, node):
        if node.level or not node.module:
            return
        parts = node.module.split('.')
        if self._module(node, parts):
            return
        for alias in node.names:
            if is_private(alias.name) and parts[0] != 'cyborg':
                self.add(node, alias.name,
                         'imported from %s' % node.module)

    def _module(self, node, parts):
        if parts[0] == 'cyborg':
            return False
        for part in parts[1:]:
            if is_private(part):
                self.add(node, part, 'module of %s' % '.'.join(parts))
                return True
        return False

    def visit_ClassDef(self, node):
        inherited = self.classes.get(node.name, set())
        for item in node.body:
            targets = []
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                targets = [item.name]
            elif isinstance(item, ast.Assign):
                targets = [t.id for t in item.targets
                           if isinstance(t, ast.Name)]
            for name in targets:
                if name in inherited:
                    self.add(item, name, 'overridden in %s' % node.name)
        self.inherited.append(inherited)
        self.generic_visit(node)
        self.inherited.pop()

    def visit_Attribute(self, node):
        name = node.attr
        if name in self.internal:
            self.add(node, name, 'an undocumented attribute of a library')
        if is_private(name) and name not in DOCUMENTED:
            if _is_self(node.value):
                if name in self.inherited[-1]:
                    self.add(node, name, 'inherited from a library')
            elif name not in self.own:
                self.add(node, name, 'attribute cyborg does not define')
        self.generic_visit(node)

    def visit_Call(self, node):
        if (isinstance(node.func, ast.Name) and node.func.id in _ACCESSORS
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            name = node.args[1].value
            if (is_private(name) and name not in self.own
                    and name not in DOCUMENTED):
                self.add(node, name, '%s with a literal' % node.func.id)
        self.generic_visit(node)


def scan(source, path='<snippet>', own=frozenset(), classes=None,
         internal=frozenset()):
    """The uses of other libraries' private names in ``source``."""
    scanner = _Scanner(path, own, classes or {}, internal)
    scanner.visit(ast.parse(source))
    return scanner.uses


def _read(path):
    with open(path) as f:
        return f.read()


def library_classes(module):
    """{name: private names from other libraries} of ``module``'s classes
    (nested ones too) that are built on another library's class."""
    found = {}
    todo = [value for value in vars(module).values()
            if inspect.isclass(value)]
    while todo:
        cls = todo.pop()
        if cls.__module__ != module.__name__ or cls.__name__ in found:
            continue
        found[cls.__name__] = library_names(cls)
        todo.extend(value for value in vars(cls).values()
                    if inspect.isclass(value))
    return found


def _with_imports(namespace, function):
    """``namespace`` with what the import statements in ``function``
    bind."""
    for node in ast.walk(function):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(
                node, 'level', 0):
            try:
                exec(compile(ast.Module([node], []), '<import>', 'exec'),
                     namespace)
            except ImportError:
                pass
    return namespace


def _local_classes(module, tree):
    """Classes defined in functions (not reachable from the module): their
    bases resolved by name from the module's namespace."""
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for item in ast.walk(node):
            if not isinstance(item, ast.ClassDef):
                continue
            names = set()
            namespace = _with_imports(dict(vars(module)), node)
            for base in item.bases:
                try:
                    value = eval(compile(ast.Expression(base), '<base>',
                                         'eval'), namespace)
                except Exception:
                    continue
                if inspect.isclass(value):
                    names |= library_names(type('_', (value,), {}))
            found[item.name] = names
    return found


_ANALYSED = {}


def analyse(path):
    """``(tree, classes)`` of the module at ``path``: its syntax tree and
    {class name: its private names from other libraries}."""
    if path not in _ANALYSED:
        tree = ast.parse(_read(path))
        name = module_name(path)
        classes = {}
        if name not in NOT_IMPORTED:
            module = importlib.import_module(name)
            classes = library_classes(module)
            for local, names in _local_classes(module, tree).items():
                classes.setdefault(local, names)
        _ANALYSED[path] = (tree, classes)
    return _ANALYSED[path]


def _path_of(module):
    """The file of cyborg module ``module``, or None."""
    base = os.path.join(TOP, *module.split('.'))
    for path in (base + '.py', os.path.join(base, '__init__.py')):
        if os.path.exists(path):
            return path
    return None


def imported_modules(tree):
    """The files of the cyborg modules that ``tree`` imports."""
    paths = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and (
                node.module or '').split('.')[0] == 'cyborg':
            names = [node.module + '.' + alias.name for alias in node.names]
            names.append(node.module)
        else:
            continue
        for name in names:
            if name.split('.')[0] == 'cyborg' and _path_of(name):
                paths.add(_path_of(name))
    return paths


def own_names(path):
    """The private names that the module at ``path`` may use as cyborg's:
    those it defines and those the cyborg modules it imports define (not
    those they have from other libraries' classes)."""
    tree, classes = analyse(path)
    own = defined_names(tree, classes) | set(CYBORG_ELSEWHERE)
    for other in imported_modules(tree):
        if other != path:
            own |= defined_names(*analyse(other))
    return own


def scan_tree(paths):
    """The uses of other libraries' private names in the modules at
    ``paths``."""
    internal = set()
    for shim in shims().values():
        internal.update(getattr(shim, 'INTERNAL_NAMES', ()))
    uses = []
    for path in paths:
        tree, classes = analyse(path)
        scanner = _Scanner(path, own_names(path), classes, internal)
        scanner.visit(tree)
        uses.extend(scanner.uses)
    return uses


def shims():
    """{module: the shim module} of cyborg/compat."""
    found = {}
    for path in source_files(COMPAT, skip=()):
        name = module_name(path)
        if name != 'cyborg.compat':
            found[name] = importlib.import_module(name)
    return found


def _fmt(uses):
    return '\n'.join('%s:%d: %s (%s)' % (os.path.relpath(u.path, TOP),
                                        u.line, u.name, u.why)
                     for u in sorted(uses))


class ScannerTest(testtools.TestCase):
    """What the scanner finds in snippets like the code before the
    shims."""

    def names(self, source, **kwargs):
        return [(use.line, use.name) for use in scan(source, **kwargs)]

    def test_imports(self):
        self.assertEqual(
            [(1, '_drivers'), (2, '_x'), (3, '_y')],
            self.names('from oslo_messaging._drivers import base\n'
                       'import amqp._x.y\n'
                       'from pecan import _y\n'
                       'from cyborg import _ours\n'
                       'from . import _local\n'))

    def test_attributes(self):
        # Today's code before its shims, one line of each kind.
        source = ('engine.pool._pre_ping = False\n'
                  'server._executor_cls = Executor\n'
                  'listings = generator._list_opts([namespace])\n'
                  'rfile._read_buf, rfile._read_pos = b"", 0\n'
                  'x = page._replace(a=1)\n'
                  'y = helpers._ours()\n')
        self.assertEqual(
            [(1, '_pre_ping'), (2, '_executor_cls'), (3, '_list_opts'),
             (4, '_read_buf'), (4, '_read_pos')],
            self.names(source, own={'_ours'}))

    def test_undocumented_attributes(self):
        self.assertEqual(
            [(1, 'getargspec'), (2, 'ValueClass')],
            self.names('pecan_core.getargspec = cached\n'
                       'values.ValueClass = values.get_value_class()\n',
                       internal={'getargspec', 'ValueClass'}))

    def test_a_name_cyborg_defines_elsewhere_is_still_caught(self):
        # The agent manager has a _driver method, but common/rpc.py does
        # not import it: oslo.messaging's Transport._driver, as rpc.py
        # used it before its shim, is caught.
        own = own_names(os.path.join(CYBORG, 'common', 'rpc.py'))
        self.assertNotIn('_driver', own)
        self.assertIn('_driver', own_names(os.path.join(
            CYBORG, 'agent', 'manager.py')))
        self.assertEqual([(1, '_driver')], self.names(
            'super().__init__(transport._driver)\n', own=own))

    def test_getattr_with_a_literal(self):
        self.assertEqual(
            [(1, '_argspec_cache'), (2, '_x')],
            self.names('getattr(pecan.core, "_argspec_cache", None)\n'
                       'setattr(obj, "_x", 1)\n'
                       'getattr(obj, "_ours")\n'
                       'getattr(obj, "public")\n', own={'_ours'}))

    def test_a_class_on_a_library_class(self):
        source = ('class Transport(transport.TCPTransport):\n'
                  '    _ours = 1\n'
                  '    def _read(self, n):\n'
                  '        self._mine = self._read_buffer\n'
                  '        return super()._read(n)\n')
        classes = {'Transport': {'_read', '_read_buffer'}}
        self.assertEqual([(3, '_read'), (4, '_read_buffer'), (5, '_read')],
                         self.names(source, classes=classes))

    def test_library_names_from_the_real_class(self):
        from amqp import transport

        class Transport(transport.TCPTransport):
            pass
        names = library_names(Transport)
        self.assertIn('_read', names)          # a method
        self.assertIn('_read_buffer', names)   # assigned in __init__
        self.assertNotIn('__init__', names)

    def test_a_subclass_in_a_fixture_module_is_caught(self):
        # As db/api.py did before its shim: a class defined in a function
        # that overrides a private method of PyMySQL's connection.
        source = ('from pymysql import connections\n'
                  'def connection_type():\n'
                  '    class Connection(connections.Connection):\n'
                  '        def _create_ssl_ctx(self, sslp):\n'
                  '            return super()._create_ssl_ctx(sslp)\n'
                  '    return Connection\n')
        namespace = {}
        exec(compile(source, '<fixture>', 'exec'), namespace)
        module = type('M', (), namespace)
        classes = _local_classes(module, ast.parse(source))
        self.assertIn('_create_ssl_ctx', classes['Connection'])
        self.assertEqual([(4, '_create_ssl_ctx'), (5, '_create_ssl_ctx')],
                         self.names(source, classes=classes))


class PrivateNamesTest(testtools.TestCase):

    def test_no_private_name_of_a_library_outside_the_shims(self):
        paths = list(source_files())
        self.assertEqual('', _fmt(scan_tree(paths)),
                         'use a shim of cyborg/compat (see '
                         'doc/source/contributor/library-internals.rst)')

    def test_each_shim_lists_exactly_the_private_names_it_uses(self):
        for name, shim in shims().items():
            used = {use.name for use in scan_tree([shim.__file__])}
            declared = shim.PRIVATE_NAMES + getattr(shim, 'INTERNAL_NAMES',
                                                    ())
            self.assertEqual(sorted(used), sorted(declared),
                             '%s.PRIVATE_NAMES' % name)

    def test_each_shim_names_its_capped_library(self):
        capped = {utils.canonicalize_name(name): module for name, (module, _)
                  in test_requirements.PRIVATE_USERS.items()}
        shimmed = {utils.canonicalize_name(shim.DISTRIBUTION)
                   for shim in shims().values()
                   if shim.DISTRIBUTION is not None}  # the standard library
        # kombu: subclassed through its public classes, no private name.
        self.assertEqual(sorted(set(capped) - {'kombu'}), sorted(shimmed))

    def test_the_shims_are_the_package(self):
        self.assertEqual(
            sorted(shims()),
            sorted('cyborg.compat.' + name for name in compat.SHIMS))

    def test_cyborg_defines_the_names_read_elsewhere(self):
        for name, module in CYBORG_ELSEWHERE.items():
            self.assertIn(name, defined_names(*analyse(_path_of(module))))

    def test_the_modules_not_imported_define_no_class(self):
        for name in NOT_IMPORTED:
            path = os.path.join(TOP, *name.split('.')) + '.py'
            tree = ast.parse(_read(path))
            self.assertEqual([], [node.name for node in ast.walk(tree)
                                  if isinstance(node, ast.ClassDef)], name)

    def test_the_standard_library_is_external_not_the_builtins(self):
        self.assertEqual([], _external_classes(type('X', (dict,), {})))
        self.assertEqual([threading.Thread], _external_classes(
            type('X', (threading.Thread,), {})))
