"""The policy enforcer and the base rules."""

import json
import os
import warnings

import fixtures
from oslo_policy import policy as oslo_policy

from cyborg.common import context
from cyborg.common import exception
from cyborg.common import policy
from cyborg import policies
from cyborg.tests import base

BASE_RULES = {
    'admin_api', 'project_admin_api', 'project_member_api',
    'project_reader_api', 'project_member_or_admin',
    'project_reader_or_admin', 'service_api', 'project_manager_api',
    'project_manager_or_admin', 'project_member_or_service',
    'admin_or_owner',
}


def ctx(roles, project='p1', service_roles=None):
    return context.RequestContext(user_id='u1', project_id=project,
                                  roles=roles, is_admin='admin' in roles,
                                  service_roles=service_roles)


# Upstream's 22 API rules; operators' policy files name them.
API_RULES = {
    'cyborg:device_profile:%s' % a for a in ('get_all', 'get_one',
                                             'create', 'delete')} | {
    'cyborg:arq:%s' % a for a in ('get_all', 'get_one', 'create',
                                  'update', 'delete')} | {
    'cyborg:deployable:%s' % a for a in ('get_all', 'get_one',
                                         'program')} | {
    'cyborg:device:%s' % a for a in ('get_all', 'get_one', 'enable',
                                     'disable')} | {
    'cyborg:attribute:%s' % a for a in ('get_all', 'get_one', 'create',
                                        'delete')} | {
    'cyborg:accelerator:%s' % a for a in ('get_all', 'get_one', 'create',
                                          'update', 'attach', 'detach')} | {
    'cyborg:host:get_all', 'cyborg:host:get_one', 'cyborg:driver:get_all',
    'cyborg:driver:install', 'cyborg:driver:update',
    'cyborg:driver:uninstall', 'cyborg:service:get_all',
    'cyborg:discovery:create', 'cyborg:attachment:create',
    'cyborg:attachment:delete', 'cyborg:hardware:get_all'}


class PolicyTest(base.TestCase):

    def setUp(self):
        super().setUp()
        policy.reset()
        self.addCleanup(policy.reset)

    def assert_allowed(self, rule, context, project='p1'):
        policy.authorize(rule, {'project_id': project}, context)

    def assert_denied(self, rule, context, project='p1'):
        exc = self.assertRaises(exception.PolicyNotAuthorized,
                                policy.authorize, rule,
                                {'project_id': project}, context)
        self.assertEqual(403, exc.code)
        self.assertIn(rule, str(exc))

    def test_base_and_upstream_api_rules(self):
        rules = policies.list_rules()
        self.assertEqual(BASE_RULES | API_RULES,
                         {rule.name for rule in rules})
        self.assertEqual(len(rules), len({rule.name for rule in rules}))
        for rule in rules:
            if rule.name in API_RULES:
                self.assertEqual(['project'], rule.scope_types, rule.name)

    def test_admin_api(self):
        self.assert_allowed('admin_api', ctx(['admin']))
        self.assert_denied('admin_api', ctx(['member', 'reader']))

    def test_project_rules_check_the_target_project(self):
        self.assert_allowed('project_member_api', ctx(['member']))
        self.assert_denied('project_member_api', ctx(['member']),
                           project='p2')
        self.assert_denied('project_member_api', ctx(['reader']))
        self.assert_allowed('project_reader_or_admin', ctx(['reader']))
        self.assert_allowed('project_reader_or_admin', ctx(['admin']),
                            project='p2')

    def test_manager_and_service(self):
        self.assert_allowed('project_manager_or_admin', ctx(['manager']))
        self.assert_denied('project_manager_or_admin', ctx(['member']))
        self.assert_allowed('project_member_or_service', ctx(['service']),
                            project='other')
        self.assert_denied('service_api', ctx(['member']))

    def test_legacy_owner_rule_only_without_new_defaults(self):
        self.assert_denied('project_member_or_admin', ctx(['viewer']))
        self.flags(enforce_new_defaults=False, group='oslo_policy')
        policy.reset()
        self.assert_allowed('project_member_or_admin', ctx(['viewer']))

    def test_unknown_rule(self):
        self.assertRaises(oslo_policy.PolicyNotRegistered,
                          policy.authorize, 'cyborg:nothing:get', {},
                          ctx(['admin']))

    def test_enforcer_for_the_oslopolicy_tools(self):
        enforcer = policy.get_enforcer()
        self.assertIsInstance(enforcer, oslo_policy.Enforcer)
        self.assertIs(enforcer, policy.init())
        self.assertTrue(BASE_RULES <= set(enforcer.registered_rules))

    def test_policy_file_looked_at_every_interval_not_every_request(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'policy.yaml')
        now = [100.0]
        enforcer = policy._Enforcer(self.conf, clock=lambda: now[0],
                                    policy_file=path)
        enforcer.register_defaults(policies.list_rules())
        found = []
        real = enforcer._get_policy_path
        enforcer._get_policy_path = lambda p: found.append(p) or real(p)

        def allowed():
            return enforcer.authorize('admin_api', {}, ctx(['member']))
        self.assertFalse(allowed())
        looks = len(found)
        self.assertGreater(looks, 0)
        with open(path, 'w') as f:
            json.dump({'admin_api': '@'}, f)
        # Within the interval: the files are not looked at again.
        now[0] += policy.CHECK_INTERVAL / 2
        for _ in range(5):
            self.assertFalse(allowed())
        self.assertEqual(looks, len(found))
        # Then the change is read.
        now[0] += policy.CHECK_INTERVAL
        self.assertTrue(allowed())
        self.assertIsInstance(policy.init(), policy._Enforcer)


class DecisionMemoryTest(base.TestCase):
    """The Enforcer keeps allowed decisions until it reads its rules
    again, by everything a decision depends on."""

    def setUp(self):
        super().setUp()
        policy.reset()
        self.addCleanup(policy.reset)
        self.now = [100.0]
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'policy.yaml')
        self.enforcer = policy._Enforcer(self.conf, clock=lambda: self.now[0],
                                         policy_file=self.path)
        self.enforcer.register_defaults(policies.list_rules())
        self.checks = self.useFixture(fixtures.MockPatchObject(
            oslo_policy._checks, '_check',
            wraps=oslo_policy._checks._check)).mock

    def allowed(self, rule, context, project='p1', user='u1'):
        return bool(self.enforcer.authorize(
            rule, {'project_id': project, 'user_id': user}, context))

    def test_an_allowed_decision_is_not_evaluated_again(self):
        self.assertTrue(self.allowed('project_member_api', ctx(['member'])))
        evaluated = self.checks.call_count
        self.assertGreater(evaluated, 0)
        for _ in range(5):
            self.assertTrue(self.allowed('project_member_api',
                                         ctx(['member'])))
        self.assertEqual(evaluated, self.checks.call_count)

    def test_denials_are_evaluated_every_time(self):
        for _ in range(3):
            before = self.checks.call_count
            self.assertFalse(self.allowed('admin_api', ctx(['member'])))
            self.assertGreater(self.checks.call_count, before)
            exc = self.assertRaises(
                exception.PolicyNotAuthorized, self.enforcer.authorize,
                'admin_api', {}, ctx(['member']), do_raise=True,
                exc=exception.PolicyNotAuthorized, action='admin_api')
            self.assertIn('admin_api', str(exc))

    def test_every_value_of_the_caller_and_target_counts(self):
        self.assertTrue(self.allowed('project_member_api', ctx(['member'])))
        # Another project, other roles, another rule: decided anew.
        self.assertFalse(self.allowed('project_member_api', ctx(['member']),
                                      project='p2'))
        self.assertFalse(self.allowed('project_member_api',
                                      ctx(['member'], project='p2')))
        self.assertFalse(self.allowed('project_member_api', ctx(['reader'])))
        self.assertFalse(self.allowed('admin_api', ctx(['member'])))
        self.assertTrue(self.allowed('project_reader_api', ctx(['reader'])))
        self.assertTrue(self.allowed('project_member_or_service',
                                     ctx(['member'])))
        self.assertFalse(self.allowed('service_api', ctx(['member'])))
        self.assertTrue(self.allowed('service_api',
                                     ctx(['member', 'service'])))
        self.assertFalse(self.allowed('service_api', ctx(['member'])))

    def test_is_admin_counts_and_is_read_without_a_warning(self):
        self.flags(enforce_new_defaults=False, group='oslo_policy')
        rule = 'project_member_or_admin'
        admin = context.RequestContext(user_id='u1', project_id='p1',
                                       roles=['viewer'], is_admin=True)
        plain = context.RequestContext(user_id='u1', project_id='p1',
                                       roles=['viewer'], is_admin=False)
        self.assertNotEqual(admin.policy_key(), plain.policy_key())
        with warnings.catch_warnings():
            warnings.simplefilter('error', DeprecationWarning)
            admin.policy_key()
        self.assertTrue(self.allowed(rule, admin, project='p2'))
        self.assertFalse(self.allowed(rule, plain, project='p2'))
        self.assertTrue(self.allowed(rule, admin, project='p2'))

    def test_a_changed_policy_file_ends_the_decisions(self):
        self.assertTrue(self.allowed('project_member_api', ctx(['member'])))
        with open(self.path, 'w') as f:
            json.dump({'project_member_api': '!'}, f)
        self.now[0] += policy.CHECK_INTERVAL / 2
        self.assertTrue(self.allowed('project_member_api', ctx(['member'])))
        self.now[0] += policy.CHECK_INTERVAL
        self.assertFalse(self.allowed('project_member_api', ctx(['member'])))

    def test_rules_set_by_code_end_the_decisions(self):
        self.assertTrue(self.allowed('project_member_api', ctx(['member'])))
        self.enforcer.set_rules(oslo_policy.Rules.from_dict(
            {'project_member_api': '!'}), overwrite=False)
        self.assertFalse(self.allowed('project_member_api', ctx(['member'])))

    def test_what_cannot_make_a_key_is_evaluated_every_time(self):
        target = {'project_id': 'p1', 'user_id': 'u1', 'extra': {'a': 1}}
        for _ in range(2):
            before = self.checks.call_count
            self.assertTrue(self.enforcer.authorize(
                'project_member_api', target, ctx(['member'])))
            self.assertGreater(self.checks.call_count, before)
        credentials = {'project_id': 'p1', 'roles': ['member']}
        for _ in range(2):
            before = self.checks.call_count
            self.assertTrue(self.enforcer.authorize(
                'project_member_api', {'project_id': 'p1'}, credentials))
            self.assertGreater(self.checks.call_count, before)

    def test_decisions_kept_are_bounded(self):
        self.useFixture(fixtures.MockPatchObject(policy, 'MAX_DECISIONS', 3))
        for user in range(10):
            self.assertTrue(self.allowed('project_member_api',
                                         ctx(['member']), user='u%d' % user))
            self.assertLessEqual(len(self.enforcer._decisions), 3)
