"""Policy rules of ``/v2/attributes``.

Names and defaults are upstream's: reading is for project managers and
administrators, changing is for administrators. Before the new defaults
are enforced, reads also pass the older ``rule:admin_api``.
"""

from oslo_policy import policy

PREFIX = 'cyborg:attribute:%s'
READ = 'rule:project_manager_or_admin'
WRITE = 'rule:admin_api'
_REASON = 'Project managers may read attributes too.'


def _legacy(name):
    """The read rule before project managers: administrators."""
    return policy.DeprecatedRule(name=name, check_str='rule:admin_api',
                                 deprecated_reason=_REASON,
                                 deprecated_since='2026.2')


def _rule(action, check_str, description, method, path):
    return policy.DocumentedRuleDefault(
        name=PREFIX % action, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'],
        deprecated_rule=_legacy(PREFIX % action) if check_str == READ
        else None)


RULES = [
    _rule('get_all', READ, 'List attributes of deployables.',
          'GET', '/v2/attributes'),
    _rule('get_one', READ, 'Show an attribute.',
          'GET', '/v2/attributes/{attribute_uuid}'),
    _rule('create', WRITE, 'Add an attribute to a deployable.',
          'POST', '/v2/attributes'),
    _rule('delete', WRITE, 'Delete an attribute.',
          'DELETE', '/v2/attributes/{attribute_uuid}'),
]


def list_rules():
    return RULES
