"""Policy rules of ``/v2/devices``.

Names and defaults are upstream's: reading is for project managers and
administrators, changing is for administrators. Before the new defaults
are enforced, reads also pass the older ``rule:admin_api``.
"""

from cyborg.policies import base

PREFIX = 'cyborg:device:%s'
READ = 'rule:project_manager_or_admin'
WRITE = 'rule:admin_api'
_REASON = 'Project managers may read devices too.'


def _rule(action, check_str, description, method, path):
    """Reads also pass the older administrators-only check."""
    return base.api_rule(
        PREFIX % action, check_str, description, [(method, path)],
        deprecated_check='rule:admin_api' if check_str == READ else None,
        deprecated_reason=_REASON)


RULES = [
    _rule('get_all', READ, 'List devices.',
          'GET', '/v2/devices'),
    _rule('get_one', READ, 'Show a device.',
          'GET', '/v2/devices/{device_uuid}'),
    _rule('disable', WRITE, 'Disable a device: nothing more is scheduled on '
          'it.', 'POST', '/v2/devices/{device_uuid}/disable'),
    _rule('enable', WRITE, 'Enable a device again.',
          'POST', '/v2/devices/{device_uuid}/enable'),
]


def list_rules():
    return RULES
