"""Policy rules of ``/v2/deployables``.

Names and defaults are upstream's: reading is for project managers and
administrators, changing is for administrators. Before the new defaults
are enforced, reads also pass the older ``rule:admin_api``.
"""

from cyborg.policies import base

PREFIX = 'cyborg:deployable:%s'
READ = 'rule:project_manager_or_admin'
WRITE = 'rule:admin_api'
_REASON = 'Project managers may read deployables too.'


def _rule(action, check_str, description, method, path):
    """Reads also pass the older administrators-only check."""
    return base.api_rule(
        PREFIX % action, check_str, description, [(method, path)],
        deprecated_check='rule:admin_api' if check_str == READ else None,
        deprecated_reason=_REASON)


RULES = [
    _rule('get_all', READ, 'List deployables.',
          'GET', '/v2/deployables'),
    _rule('get_one', READ, 'Show a deployable.',
          'GET', '/v2/deployables/{deployable_uuid}'),
    _rule('program', WRITE, 'Program a deployable (an FPGA) with a bitstream '
          'image.', 'PATCH', '/v2/deployables/{deployable_uuid}/program'),
]


def list_rules():
    return RULES
