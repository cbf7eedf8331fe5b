"""Policy rules of the generic-driver operations (microversion 2.5):
``/v2/hosts``, ``/v2/drivers``, ``/v2/services``, ``/v2/discovery`` and
``/v2/attachments``, and ``/v2/hardware`` (2.6). They manage the
cloud's hardware and agents, so every one is for administrators by
default."""

from cyborg.policies import base

ADMIN = 'rule:admin_api'


def _rule(name, description, method, path):
    return base.api_rule('cyborg:%s' % name, ADMIN, description,
                         [(method, path)])


RULES = [
    _rule('host:get_all', 'List hosts with their agents and drivers.',
          'GET', '/v2/hosts'),
    _rule('host:get_one', 'Show a host.', 'GET', '/v2/hosts/{hostname}'),
    _rule('driver:get_all', 'List the drivers of every host.',
          'GET', '/v2/drivers'),
    _rule('driver:install', 'Install (load and enable) a driver on one '
          'host or every host.', 'POST', '/v2/drivers'),
    _rule('driver:update', 'Reload a driver with its current settings.',
          'PATCH', '/v2/drivers/{name}'),
    _rule('driver:uninstall', 'Uninstall a driver.',
          'DELETE', '/v2/drivers/{name}'),
    _rule('service:get_all', 'List the acceleration services of every '
          'deployable.', 'GET', '/v2/services'),
    _rule('discovery:create', 'Run discovery now on one host or every '
          'host.', 'POST', '/v2/discovery'),
    _rule('attachment:create', "Attach a device profile's accelerators "
          'to an instance.', 'POST', '/v2/attachments'),
    _rule('hardware:get_all', 'List the PCI functions the drivers of each '
          'host looked at, offered or not and why (2.6).',
          'GET', '/v2/hardware'),
    _rule('attachment:delete', 'Detach the accelerators of an instance.',
          'DELETE', '/v2/attachments/{instance_uuid}'),
]


def list_rules():
    return RULES
