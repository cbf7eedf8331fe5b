"""Policy rules of ``/v2/accelerator_requests``.

Names and defaults are upstream's: project readers read their project's
ARQs, project members and services (Nova) create, bind and delete them.
Ownership is enforced by the database query (another project's ARQ is a
404), and binding, unbinding and deleting bound ARQs also need a service
token, in code, whatever the policy says.
"""

from cyborg.policies import base

PREFIX = 'cyborg:arq:%s'
READ = 'rule:project_reader_or_admin'
WRITE = 'rule:project_member_or_service'
PATH = '/v2/accelerator_requests'


def _rule(action, check_str, description, operations):
    return base.api_rule(PREFIX % action, check_str, description,
                         operations)


RULES = [
    _rule('get_all', READ, 'List accelerator requests.', [('GET', PATH)]),
    _rule('get_one', READ, 'Show an accelerator request.',
          [('GET', PATH + '/{accelerator_request_uuid}')]),
    _rule('create', WRITE, 'Create the accelerator requests of a device '
          'profile.', [('POST', PATH)]),
    _rule('update', WRITE, 'Bind or unbind accelerator requests.',
          [('PATCH', PATH)]),
    _rule('delete', WRITE, 'Delete accelerator requests.',
          [('DELETE', PATH + '?arqs={uuids}'),
           ('DELETE', PATH + '?instance={instance_uuid}')]),
]


def list_rules():
    return RULES
