"""The policy table: every rule name the code checks is a constant of
``cyborg.policies``, every constant is a registered rule, every
registered rule is checked (or named below, with the reason it is not),
and no policy check in the code is given a string."""

import ast
from importlib import metadata
import os
import re

import testtools

from cyborg import policies
from cyborg.tests.unit import test_hygiene

TOP = test_hygiene.TOP
SOURCE = os.path.join(TOP, 'cyborg')
TABLE_MODULE = os.path.join(SOURCE, 'policies', '__init__.py')

#: Registered rules that neither the code nor another rule's default
#: uses, and why they are kept.
UNUSED = {
    'project_admin_api': "upstream's persona; operators' policy files "
                         'may build their own rules from it',
    'project_member_or_admin': "upstream's persona; operators' policy "
                               'files may name it',
}

#: Calls that check a policy rule, by the called function's name.
CHECKS = ('authorize', 'enforce')

RULE_NAME = re.compile(r'^cyborg:[a-z_]+:[a-z_]+$')


def _sources():
    """(path, parsed module) of every module of cyborg but the tests."""
    for top, dirs, files in os.walk(SOURCE):
        dirs[:] = [d for d in dirs if d not in ('tests', '__pycache__')]
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(top, name)
                with open(path) as f:
                    yield path, ast.parse(f.read(), path)


def _called_name(call):
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _rule_argument(call):
    for keyword in call.keywords:
        if keyword.arg == 'rule':
            return keyword.value
    return call.args[0] if call.args else None


def _policy_checks(tree):
    """How many policy checks a module makes, and (line, call) of those
    whose rule is neither a name nor an attribute."""
    found, wrong = 0, []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called_name(node) in CHECKS):
            continue
        rule = _rule_argument(node)
        if rule is None:
            continue
        found += 1
        if not isinstance(rule, (ast.Name, ast.Attribute)):
            wrong.append((node.lineno, ast.unparse(node)))
    return found, sorted(wrong)


def _constants():
    """Every rule-name constant of cyborg.policies, by name."""
    return {name: value for name, value in vars(policies).items()
            if name.isupper() and isinstance(value, str)
            and RULE_NAME.match(value)}


def _policies_attributes(tree):
    """The names read as ``policies.<NAME>`` in a module."""
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == 'policies'}


def _rules_named_in(check_str):
    return set(re.findall(r'\brule:(\w+)', check_str))


class PolicyTableTest(testtools.TestCase):

    def test_policy_checks_name_a_constant_or_variable(self):
        """A literal (``'cyborg:device:get_one'``) or a name built at run
        time (``'cyborg:device:%s' % action``) fails only when a request
        comes; ``policies.DEVICE_GET_ONE`` fails at import."""
        checks, bad = 0, []
        for path, tree in _sources():
            found, wrong = _policy_checks(tree)
            checks += found
            bad += ['%s:%d: %s' % (os.path.relpath(path, TOP), line, call)
                    for line, call in wrong]
        self.assertEqual([], bad, 'name the rule by its constant in '
                         'cyborg.policies')
        # The walk does see the API's checks.
        self.assertGreater(checks, len(policies.TABLE))

    def test_a_literal_is_found(self):
        tree = ast.parse(
            "common.authorize('cyborg:device:get_one')\n"
            "common.authorize('cyborg:device:%s' % action)\n"
            "enforcer.enforce(rule=f'cyborg:{name}', target={})\n"
            "common.authorize(policies.DEVICE_GET_ONE)\n"
            "policy.authorize(rule, target, context)\n")
        found, wrong = _policy_checks(tree)
        self.assertEqual(5, found)
        self.assertEqual([1, 2, 3], [line for line, _ in wrong])

    def test_rule_names_are_written_only_in_the_table(self):
        found = []
        for path, tree in _sources():
            if path == TABLE_MODULE:
                continue
            for node in ast.walk(tree):
                if (isinstance(node, ast.Constant)
                        and isinstance(node.value, str)
                        and RULE_NAME.match(node.value)):
                    found.append('%s:%d: %r' % (os.path.relpath(path, TOP),
                                                node.lineno, node.value))
        self.assertEqual([], found)

    def test_constants_are_the_rows(self):
        constants = _constants()
        names = [rule.name for rule in policies.TABLE]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(sorted(names), sorted(constants.values()))
        for constant, name in constants.items():
            # DEVICE_PROFILE_GET_ONE = 'cyborg:device_profile:get_one'
            self.assertEqual('CYBORG_' + constant,
                             name.replace(':', '_').upper())

    def test_constants_are_registered(self):
        """With the rules the oslopolicy tools and the docs load, through
        the entry point setup.cfg names."""
        point, = metadata.entry_points(group='oslo.policy.policies',
                                       name='cyborg.api')
        rules = point.load()()
        registered = {rule.name for rule in rules}
        self.assertEqual(set(), set(_constants().values()) - registered)
        self.assertEqual(len(rules), len(registered))

    def test_code_names_only_constants_that_exist(self):
        """Also in modules no test imports."""
        for path, tree in _sources():
            for attr in _policies_attributes(tree):
                self.assertTrue(hasattr(policies, attr), '%s: policies.%s'
                                % (os.path.relpath(path, TOP), attr))

    def test_every_registered_rule_is_used(self):
        constants = _constants()
        used = set()
        for path, tree in _sources():
            if path != TABLE_MODULE:
                used |= {constants[attr] for attr in
                         _policies_attributes(tree) if attr in constants}
        for rule in policies.list_rules():
            used |= _rules_named_in(rule.check_str)
            if rule.deprecated_rule:
                used |= _rules_named_in(rule.deprecated_rule.check_str)
        registered = {rule.name for rule in policies.list_rules()}
        self.assertEqual(set(UNUSED), registered - used)
        # Every API rule is checked by the code itself, not only named in
        # another rule's default.
        self.assertEqual(set(), set(constants.values()) - used)

    def test_every_row_guards_operations(self):
        for rule in policies.TABLE:
            self.assertTrue(rule.operations, rule.name)
            self.assertTrue(rule.description, rule.name)
            self.assertEqual(('project',), rule.scope_types, rule.name)
            for method, path in rule.methods_and_paths():
                self.assertIn(method, ('GET', 'POST', 'PUT', 'PATCH',
                                       'DELETE'), rule.name)
                self.assertRegex(path, r'^/v[12]/', rule.name)

    def test_routes(self):
        routes = policies.routes()
        self.assertEqual(sorted(routes), routes)
        self.assertEqual(len(routes), len({(r.path, r.method)
                                           for r in routes}))
        self.assertEqual(sum(len(r.operations) for r in policies.TABLE),
                         len(routes))
        self.assertIn(('/v2/devices/{device_uuid}', 'GET',
                       policies.DEVICE_GET_ONE,
                       'rule:project_manager_or_admin', ('project',),
                       'rule:admin_api'),
                      routes)
        self.assertIn(('/v2/devices/{device_uuid}/enable', 'POST',
                       policies.DEVICE_ENABLE, 'rule:admin_api',
                       ('project',), ''), routes)
