"""The policy enforcer and the base rules."""

import json
import os

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
