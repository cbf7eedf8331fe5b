"""Options of the [agent] group."""

import socket

from oslo_config import cfg

GROUP = cfg.OptGroup('agent', title='Options for the cyborg agent')

opts = [
    cfg.ListOpt(
        'enabled_drivers', default=['fake_driver'],
        help='Accelerator drivers the agent loads, by entry-point name in '
             'the cyborg.accelerator.driver namespace.'),
    cfg.StrOpt(
        'sysfs_root', default='/sys',
        help='Directory that stands for /sys when drivers read hardware. '
             'Point it at a captured tree to read that instead, or at a '
             'capture file written by cyborg-agent --capture, which the '
             'agent lays out as a tree in a temporary directory. What the '
             'host uses (mounts, swaps, addresses) is read from the proc '
             'directory beside it (/proc for /sys).'),
    cfg.StrOpt(
        'pci_ids_path',
        help='The PCI ID database (pci.ids, plain or gzip-compressed) '
             'that names devices, as lspci names them. Unset: the first '
             'of /usr/share/misc/pci.ids, /usr/share/hwdata/pci.ids, '
             '/usr/share/pci.ids and their .gz variants that exists; '
             'without one, devices are named by their ids.'),
    cfg.BoolOpt(
        'allow_no_iommu_group', default=False,
        help='Offer PCI functions that have no IOMMU group. Only for '
             'deployments that hand devices to containers, never to VMs: '
             'VFIO cannot assign a function without an IOMMU group to a '
             'VM, and every boot that gets one fails. Functions the host '
             'uses (an interface up or with addresses, a mounted disk, '
             'the console) are never offered.'),
    cfg.IntOpt(
        'heartbeat_interval', default=10, min=1,
        help='Seconds between two heartbeats of the agent to the '
             'conductor. A heartbeat runs no discovery: it is one RPC '
             'cast, or the resend of a report the conductor has not '
             'accepted yet.'),
    cfg.IntOpt(
        'rescan_interval', default=15, min=0,
        help='Seconds between two looks at the hardware when no udev '
             'events announce changes (a captured tree as sysfs_root, a '
             'host without udev). A look reads the PCI devices listed in '
             'sysfs and a few files of each (driver link, VF count, mdev '
             'directories) and runs the drivers only when these changed '
             'or full_rescan_interval has passed; their result is '
             'reported only when it differs from the last report the '
             'conductor accepted. 0 disables every periodic rescan; '
             'discovery then runs only at start, on udev events, and '
             'when the conductor asks for it.'),
    cfg.IntOpt(
        'full_rescan_interval', default=600, min=0,
        help='Seconds after a discovery when the periodic rescan runs '
             'the drivers whatever sysfs looks like: it finds what '
             'neither udev events nor the cheap look of rescan_interval '
             'see, such as a QAT device going down or a changed vGPU '
             'type on a sibling function. With udev events, this is how '
             'often the periodic rescan runs. 0: never, only on a '
             'change seen.'),
    cfg.StrOpt(
        'state_file', default='$state_path/agent-state.json',
        help='File where the agent keeps the last report the conductor '
             'accepted (JSON, replaced atomically). After a restart an '
             'agent whose hardware did not change sends no report. The '
             'directory must exist and be writable by the agent; a file '
             'that cannot be read is ignored with a warning, and the '
             'conductor then gets a full report.'),
    cfg.StrOpt(
        'new_device_state', default='ready', choices=['ready', 'inactive'],
        help='What happens to a device found for the first time. ready: '
             'it is enabled and offered in Placement at once. inactive: '
             'it is recorded with status maintaining, its whole inventory '
             'reserved in Placement, until an operator enables it '
             '(openstack accelerator device enable, POST '
             '/v2/devices/{uuid}/enable); enabling it first runs its '
             'driver\'s setup step on its host and fails with 502, leaving '
             'the device disabled, when that step fails. Read by the '
             'conductor, which records the devices; set it where '
             'cyborg-conductor runs.'),
    cfg.StrOpt(
        'resource_provider_name', default=socket.getfqdn(),
        sample_default='<fqdn>',
        help='Name of the compute node resource provider in Placement '
             'under which this host\'s accelerators are reported: the '
             'name Nova gave it, its hypervisor hostname (often the fully '
             'qualified name while [DEFAULT] host is short). The agent '
             'sends it to the conductor in its hello. The conductor looks '
             'for the provider of this name; if there is none, for the '
             'one named [DEFAULT] host; if neither exists, the host\'s '
             'accelerators are not offered in Placement and the '
             'conductor logs why, trying again later.'),
    cfg.IntOpt(
        'resource_provider_startup_retries', default=3, min=0,
        deprecated_for_removal=True,
        deprecated_reason='The agent does not talk to Placement: the '
                          'conductor finds the compute node provider, and '
                          'retries a sync that finds none until it exists.',
        help='Accepted so that upstream Cyborg configuration files load; '
             'not used.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
