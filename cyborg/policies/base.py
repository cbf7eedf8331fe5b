"""Base rules: the personas API rules are written in terms of.

Names and check strings are upstream's, so operators' policy files keep
working. ``admin_or_owner`` is kept only as the deprecated alternative of
the ``*_or_*`` rules, which applies while ``[oslo_policy]
enforce_new_defaults`` is False; it is slated for removal.
"""

from oslo_policy import policy

_DEPRECATED_REASON = ('Cyborg API policies now tell project members, '
                      'readers, managers and services apart.')
DEPRECATED_SINCE = '2026.2'
_LEGACY_OWNER = 'rule:admin_or_owner'


def _legacy(name):
    """The pre-persona check of ``name``, OR-ed in while new defaults are
    not enforced."""
    return policy.DeprecatedRule(name=name, check_str=_LEGACY_OWNER,
                                 deprecated_reason=_DEPRECATED_REASON,
                                 deprecated_since=DEPRECATED_SINCE)


def _rule(name, check_str, description, legacy=False):
    return policy.RuleDefault(
        name=name, check_str=check_str, description=description,
        deprecated_rule=_legacy(name) if legacy else None)


RULES = [
    _rule('admin_api', 'role:admin', 'Cloud administrator.'),
    _rule('project_admin_api', 'role:admin and project_id:%(project_id)s',
          'Administrator of the project owning the target.'),
    _rule('project_member_api', 'role:member and project_id:%(project_id)s',
          'Member of the project owning the target.'),
    _rule('project_reader_api', 'role:reader and project_id:%(project_id)s',
          'Reader of the project owning the target.'),
    _rule('project_manager_api',
          'role:manager and project_id:%(project_id)s',
          'Manager of the project owning the target.'),
    _rule('service_api', 'role:service',
          'Another OpenStack service, such as Nova.'),
    _rule('project_member_or_admin',
          'rule:project_member_api or rule:admin_api',
          'Project member or cloud administrator.', legacy=True),
    _rule('project_reader_or_admin',
          'rule:project_reader_api or rule:admin_api',
          'Project reader or cloud administrator.', legacy=True),
    _rule('project_manager_or_admin',
          'rule:project_manager_api or rule:admin_api',
          'Project manager or cloud administrator.', legacy=True),
    _rule('project_member_or_service',
          'rule:project_member_api or rule:service_api',
          'Project member or another OpenStack service.', legacy=True),
    policy.RuleDefault(
        name='admin_or_owner',
        check_str='is_admin:True or project_id:%(project_id)s',
        description='Administrator or any user of the owning project. '
                    'Only the deprecated alternatives above use it.',
        deprecated_for_removal=True,
        deprecated_reason=_DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE),
]
