"""Policy rules of ``/v2/attributes``.

Names and defaults are upstream's: reading is for project managers and
administrators, changing is for administrators. Before the new defaults
are enforced, reads also pass the older ``rule:admin_api``.
"""

from cyborg.policies import base

PREFIX = 'cyborg:attribute:%s'
READ = 'rule:project_manager_or_admin'
WRITE = 'rule:admin_api'
_REASON = 'Project managers may read attributes too.'


def _rule(action, check_str, description, method, path):
    """Reads also pass the older administrators-only check."""
    return base.api_rule(
        PREFIX % action, check_str, description, [(method, path)],
        deprecated_check='rule:admin_api' if check_str == READ else None,
        deprecated_reason=_REASON)


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
