"""Options for the services cyborg calls: [placement], [nova], [glance],
[service_user]. Each takes keystoneauth session, auth and adapter options."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

SERVICES = {
    'placement': 'placement',
    'nova': 'compute',
    'glance': 'image',
}

glance_opts = [
    cfg.IntOpt('num_retries', default=0, min=0,
               help='Retries of a failed bitstream download from Glance.'),
    cfg.ListOpt('trusted_image_owners', default=[],
                help='Projects (ids) whose Glance images may be programmed '
                     'into FPGAs. Images of other owners are never used, '
                     'whoever can see them: a bind that names one by id '
                     'or by its accel:function_id fails. Empty: the '
                     'project of the [glance] credentials (the '
                     'operator\'s). Set the same list on conductors and '
                     'agents.'),
    cfg.IntOpt('max_image_size', default=1024 * 1024 * 1024, min=1,
               help='Largest FPGA image, in bytes, that is downloaded; a '
                    'larger one (by its size in Glance or by the bytes '
                    'that come) is refused.'),
]

service_user_opts = [
    cfg.BoolOpt('send_service_user_token', default=False,
                help='Send a service token along with the user token when '
                     'cyborg calls other services on a user\'s behalf.'),
]


def register_opts(conf):
    for group, service_type in SERVICES.items():
        conf.register_group(cfg.OptGroup(group))
        ks_loading.register_session_conf_options(conf, group)
        ks_loading.register_auth_conf_options(conf, group)
        ks_loading.register_adapter_conf_options(conf, group)
        conf.set_default('service_type', service_type, group=group)
        conf.set_default('valid_interfaces', ['internal', 'public'],
                         group=group)
    conf.register_opts(glance_opts, group='glance')
    conf.register_group(cfg.OptGroup('service_user'))
    conf.register_opts(service_user_opts, group='service_user')
    ks_loading.register_session_conf_options(conf, 'service_user')
    ks_loading.register_auth_conf_options(conf, 'service_user')


def _ks_opts(service_type=None):
    opts = (ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_auth_plugin_conf_options('password'))
    if service_type:
        opts += ks_loading.get_adapter_conf_options(include_deprecated=False)
    return _unique(opts)


def _unique(opts):
    seen = {}
    for opt in opts:
        seen.setdefault(opt.dest, opt)
    return list(seen.values())


def list_opts():
    result = {group: _ks_opts(service_type)
              for group, service_type in SERVICES.items()}
    result['glance'] = result['glance'] + glance_opts
    result['service_user'] = service_user_opts + _ks_opts()
    return result
