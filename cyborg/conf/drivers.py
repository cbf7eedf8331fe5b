"""Options of the accelerator drivers: [pci], [gpu_devices], [vgpu_<type>],
[fake_driver].

Group and option names are upstream's, so an existing cyborg.conf carries
over. ``[vgpu_<type>]`` groups are dynamic: one per type listed in
``[gpu_devices] enabled_vgpu_types``, registered by
:func:`register_vgpu_opts` when the NVIDIA driver loads.
"""

from oslo_config import cfg

PCI_GROUP = cfg.OptGroup('pci', title='Generic PCI passthrough driver')
GPU_GROUP = cfg.OptGroup('gpu_devices', title='NVIDIA GPU driver')
FAKE_GROUP = cfg.OptGroup('fake_driver', title='Fake driver (tests)')

pci_opts = [
    cfg.MultiStrOpt(
        'passthrough_whitelist', default=[],
        help='Device specs of the pci_driver, Nova style: each value is a '
             'JSON object (or a list of them) with any of "vendor_id", '
             '"product_id" (hex, "*" for any), "address" (a glob such as '
             '"0000:3b:*.*", or a dict of globs with keys "domain", "bus", '
             '"slot", "function"), "resource_class" (default CUSTOM_PCI) '
             'and "traits" (comma-separated, added to the defaults). '
             'A function matching any spec is offered whole. The name is '
             'upstream Cyborg\'s; [pci] device_spec, Nova\'s current name, '
             'takes the same specs and both may be set.'),
    cfg.MultiStrOpt(
        'device_spec', default=[],
        help='Device specs of the pci_driver, as in Nova\'s [pci] '
             'device_spec; the same format as [pci] passthrough_whitelist, '
             'and the specs of both options are used.'),
]

gpu_opts = [
    cfg.ListOpt(
        'enabled_vgpu_types', default=[],
        help='mdev types (e.g. nvidia-222) offered as VGPU. For each, '
             'a group [vgpu_<type>] with option device_addresses lists '
             'the GPUs (PCI addresses of the physical functions) carved '
             'into that type. A GPU listed there is never offered as a '
             'whole PGPU.'),
]

fake_opts = [
    cfg.StrOpt(
        'report_as', default='cyborg', choices=[
            ('cyborg', 'the card as a real driver of ours reports one: '
                       'lower-case PCI ids, a model, attribute "trait0"'),
            ('upstream', 'the card exactly as OpenStack Cyborg\'s own '
                         'fake driver reports it, for a cloud adopted from '
                         'upstream Cyborg that ran its fake driver')],
        help='How the fake driver reports its card. After "cyborg-dbsync '
             'adopt" of a cloud that ran upstream\'s fake driver (a test '
             'cloud, devstack), "upstream" makes the first report of '
             'each adopted host match the adopted rows, so nothing '
             'changes in the database or in Placement.'),
    cfg.StrOpt(
        'hold_dir',
        help='For tests only: when set, the fake driver holds every FPGA '
             'programming half-way. It writes a file named "held-<pid>-'
             '<n>" into this directory and waits until a file named '
             '"release" appears there, so a test can stop a bind in the '
             'middle (and kill the conductor there) deterministically.'),
]

vgpu_opts = [
    cfg.ListOpt(
        'device_addresses', default=[],
        help='PCI addresses of the GPUs offered as this vGPU type.'),
]


def register_opts(conf):
    conf.register_group(PCI_GROUP)
    conf.register_opts(pci_opts, group=PCI_GROUP)
    conf.register_group(GPU_GROUP)
    conf.register_opts(gpu_opts, group=GPU_GROUP)
    conf.register_group(FAKE_GROUP)
    conf.register_opts(fake_opts, group=FAKE_GROUP)


def vgpu_group_name(type_id):
    return 'vgpu_%s' % type_id


def register_vgpu_opts(conf, type_id):
    """Register ``[vgpu_<type_id>]`` (idempotent); returns the group."""
    name = vgpu_group_name(type_id)
    conf.register_opts(vgpu_opts, group=name)
    return getattr(conf, name)


def list_opts():
    return {PCI_GROUP: pci_opts, GPU_GROUP: gpu_opts,
            'vgpu_<type>': vgpu_opts, FAKE_GROUP: fake_opts}
