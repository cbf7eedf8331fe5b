"""Options of the Intel NIC driver: [nic_devices] and one group per NIC type.

Group and option names are upstream's, so an existing cyborg.conf carries
over. ``[nic_devices] enabled_nic_types`` names the NIC types; each type is
a group of its own (``[x710_static]`` in upstream's examples) with
``physical_device_mappings`` and ``function_device_mappings``, registered
by :func:`register_nic_type_opts` when the driver loads. Upstream reads the
``[x710_static]`` group whatever types are enabled; we read every enabled
type's group and only those.
"""

from oslo_config import cfg

GROUP = cfg.OptGroup('nic_devices', title='Intel NIC driver')

#: What the sample file shows as the name of a per-type group.
TYPE_GROUP_SAMPLE = '<nic_type>'

opts = [
    cfg.ListOpt(
        'enabled_nic_types', default=[],
        help='NIC types whose device mappings the intel_nic_driver uses. '
             'Each type is the name of a group of its own (for example '
             '[x710_static]) holding physical_device_mappings and '
             'function_device_mappings.'),
]

nic_type_opts = [
    cfg.ListOpt(
        'physical_device_mappings', default=[],
        help='Physical networks of the NICs, as '
             '``<physnet>:<interface>[|<interface>...]``, for '
             'example ``physnet1:eth2|eth3``. An interface is the network '
             'device name of a physical function (PF) or its PCI address '
             '(0000:3b:00.0, for a PF without a network device, such as '
             'one bound to vfio-pci). The PF and its VFs get the trait '
             'CUSTOM_<PHYSNET> and their attach handles the key '
             'physical_network. An interface mapped to several physical '
             'networks is not offered.'),
    cfg.ListOpt(
        'function_device_mappings', default=[],
        help='Functions the NICs run (for example a DDP profile), as '
             '``<function>:<interface>[|<interface>...]``, for example '
             '``GTPv1:eth3|eth2``. The PF and its VFs get the trait '
             'CUSTOM_<FUNCTION>; an interface may run several functions.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def register_nic_type_opts(conf, nic_type):
    """Register the group ``[<nic_type>]`` (idempotent); returns it.

    :raises ValueError: if ``nic_type`` is empty or already names another
        group or option (``agent``, ``DEFAULT``, ``host``...): the mapping
        options would change that group or be out of reach.
    """
    if not nic_type or nic_type == 'DEFAULT':
        raise ValueError('%r cannot name a NIC type' % (nic_type,))
    if nic_type in conf:
        existing = conf[nic_type]
        if (not isinstance(existing, cfg.ConfigOpts.GroupAttr) or
                'physical_device_mappings' not in existing):
            raise ValueError('%s is the name of another option or group; '
                             'it cannot name a NIC type' % nic_type)
    conf.register_opts(nic_type_opts, group=nic_type)
    return getattr(conf, nic_type)


def list_opts():
    return {GROUP: opts, TYPE_GROUP_SAMPLE: nic_type_opts}
