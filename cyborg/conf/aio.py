"""Options of the [aio] group: the all-in-one (cyborg-aio)."""

from oslo_config import cfg

GROUP = cfg.OptGroup('aio', title='Options for the all-in-one cyborg-aio')

AUTO = 'auto'
CYBORG = 'cyborg'
NOVA = 'nova'

opts = [
    cfg.StrOpt(
        'compute_node_provider', default=AUTO, choices=[
            (AUTO, 'nova when a Nova is configured ([nova] auth_type or '
                   'endpoint_override), cyborg otherwise'),
            (CYBORG, 'the all-in-one creates the provider at start, for a '
                     'cloud without Nova'),
            (NOVA, 'nova-compute creates it; the all-in-one never does')],
        help='Who creates the compute node resource provider (named '
             '[agent] resource_provider_name) that the accelerators\' '
             'providers hang under. A nova-compute on the same host must '
             'create it itself (it refuses one made by someone else, and '
             'then offers no VCPU, memory or disk), so with Nova the '
             'all-in-one leaves it to Nova, and its conductor hangs the '
             'accelerators under it once it exists.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
