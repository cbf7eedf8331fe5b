"""Policy rules of the v1 API's ``/v1/accelerators``.

Accelerators are a view of the cloud's hardware, like devices: project
managers and administrators read them, administrators change them.
"""

from cyborg.policies import base

PREFIX = 'cyborg:accelerator:%s'
READ = 'rule:project_manager_or_admin'
WRITE = 'rule:admin_api'
PATH = '/v1/accelerators'
ONE = PATH + '/{accelerator_uuid}'


def _rule(action, check_str, description, method, path):
    return base.api_rule(PREFIX % action, check_str, description,
                         [(method, path)])


RULES = [
    _rule('get_all', READ, 'List v1 accelerators.', 'GET', PATH),
    _rule('get_one', READ, 'Show a v1 accelerator.', 'GET', ONE),
    _rule('create', WRITE, 'Provision a free deployable as a named v1 '
          'accelerator.', 'POST', PATH),
    _rule('update', WRITE, "Replace a v1 accelerator's spec.",
          'PUT', ONE + '/acc_specs'),
    _rule('attach', WRITE, 'Attach a v1 accelerator to an instance or a '
          'host.', 'PUT', ONE),
    _rule('detach', WRITE, 'Detach a v1 accelerator.', 'DELETE', ONE),
]


def list_rules():
    return RULES
