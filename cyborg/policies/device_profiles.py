"""Policy rules of ``/v2/device_profiles``.

Names and defaults are upstream's: project readers (and administrators)
read profiles, which Nova needs for every user's boot; only
administrators create and delete them. Before the new defaults are
enforced the older checks pass too (``admin_or_owner`` for reads through
the base rule's deprecated alternative, ``is_admin`` for writes).
"""

from cyborg.policies import base

PREFIX = 'cyborg:device_profile:%s'
READ = 'rule:project_reader_or_admin'
WRITE = 'rule:admin_api'


def _rule(action, check_str, description, operations):
    return base.api_rule(PREFIX % action, check_str, description,
                         operations)


RULES = [
    _rule('get_all', READ, 'List device profiles.',
          [('GET', '/v2/device_profiles')]),
    _rule('get_one', READ, 'Show a device profile.',
          [('GET', '/v2/device_profiles/{device_profile_uuid_or_name}')]),
    _rule('create', WRITE, 'Create a device profile.',
          [('POST', '/v2/device_profiles')]),
    _rule('delete', WRITE, 'Delete device profiles.',
          [('DELETE', '/v2/device_profiles/{device_profile_uuid}'),
           ('DELETE', '/v2/device_profiles?value={names}')]),
]


def list_rules():
    return RULES
