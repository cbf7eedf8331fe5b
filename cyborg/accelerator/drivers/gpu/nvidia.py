"""NVIDIA GPUs: whole GPUs (PGPU) and vGPU types (VGPU).

A GPU (PCI class 03, vendor 10de, a physical function) is offered in
exactly one way:

* as VGPU if ``[vgpu_<type>] device_addresses`` lists it, with one
  deployable for the GPU whatever the vGPU flavour:

  - classic vGPU (mdev): inventory is the type's ``available_instances``
    plus the mdevs of that type that exist, read from the GPU itself or,
    for SR-IOV vGPU on Ampere, from its VFs; one MDEV attach handle per
    slot, the mdev is created when a request is bound;
  - vendor-specific VFIO vGPU (vGPU 17 and later on Ada, Hopper and
    Blackwell; no mdevs): each VF carries at most one vGPU, set by writing
    the type's number to its ``nvidia/current_vgpu_type``. The driver
    keeps the GPU carved as configured: every free VF on which the kernel
    says the type is creatable gets it, until the GPU is full (also after
    a reboot, which forgets the carving); one PCI attach handle per VF of
    the type;

  MIG-backed vGPU types (``A100-1-5C``, ``H200X-1-18C``: GPU slices and
  memory) are types like the others, creatable once MIG mode is on and
  GPU instances exist;
* otherwise as one PGPU, but only when nothing else may be using it.

Fail closed (upstream offers these as free PGPUs): a GPU with SR-IOV VFs
enabled, with mdevs created, exposing vGPU types (the vGPU host driver
manages it), listed for several vGPU types, or bound to a host graphics
driver such as nouveau is not offered whole; its VFs are never PGPUs.
"""

import os

from oslo_log import log as logging

from cyborg.accelerator.common import mdev
from cyborg.accelerator.common import pci
from cyborg.accelerator.common import pciids
from cyborg.accelerator.common import privileged
from cyborg.accelerator.common import records
from cyborg.accelerator.common import sysfs
from cyborg.accelerator.common import vendor_info
from cyborg.accelerator.drivers import base
from cyborg.conf import drivers as drivers_conf

LOG = logging.getLogger(__name__)

VENDOR_ID = '10de'
DRIVER_NAME = 'NVIDIA'
PGPU = 'PGPU'
VGPU = 'VGPU'
#: Kernel drivers a whole GPU may be bound to and still be handed out.
PASSTHROUGH_DRIVERS = frozenset([None, 'vfio-pci', 'nvidia'])


def vgpu_trait_name(product, mdev_name, type_id):
    """``CUSTOM_NVIDIA_<PID>_<NAME>``; NAME is the type name's second word.

    ``GRID T4-1B`` on a 1eb8 gives ``CUSTOM_NVIDIA_1EB8_T4_1B`` (upstream's
    name); a type without a two-word name falls back to its id.
    """
    words = mdev_name.split()
    return records.custom_name('NVIDIA', product,
                               words[1] if len(words) > 1 else type_id)


def vgpu_type_number(type_id):
    """The number of a vGPU type id (``nvidia-1414`` or ``1414``), None if
    it has none. Vendor-specific VFIO names types by number only."""
    number = type_id[len('nvidia-'):] if type_id.startswith(
        'nvidia-') else type_id
    return int(number) if number.isdigit() else None


def read_vgpu_config(conf):
    """``({address: type_id}, {addresses listed for several types})``."""
    assigned, conflicts = {}, set()
    for type_id in conf.gpu_devices.enabled_vgpu_types:
        group = drivers_conf.register_vgpu_opts(conf, type_id)
        if not group.device_addresses:
            LOG.warning('vGPU type %s is enabled but [%s] device_addresses '
                        'is empty', type_id,
                        drivers_conf.vgpu_group_name(type_id))
        for text in group.device_addresses:
            address = pci.parse_or_none(text)
            if address is None:
                LOG.warning('Ignoring %r in [%s] device_addresses: not a '
                            'PCI address', text,
                            drivers_conf.vgpu_group_name(type_id))
            elif assigned.get(address, type_id) != type_id:
                conflicts.add(address)
            else:
                assigned[address] = type_id
    for address in conflicts:
        LOG.warning('GPU %s is listed for several vGPU types; it is not '
                    'offered at all', address)
    return assigned, conflicts


class NvidiaGpuDriver(base.SysfsPciDriver, base.MdevManager):
    """Entry point ``nvidia_gpu_driver``."""

    device_type = 'GPU'
    driver_name = DRIVER_NAME
    vendors = (VENDOR_ID,)

    def __init__(self, conf):
        super().__init__(conf)
        self.vgpu_types, self.conflicts = read_vgpu_config(conf)

    def candidates(self, functions):
        return [f for f in functions.values()
                if f.class_code.startswith('03') and not f.is_vf]

    def build_device(self, function, functions):
        if function.address in self.conflicts:
            raise base.NotReady('listed for several vGPU types')
        type_id = self.vgpu_types.get(function.address)
        if type_id is not None:
            deployable = self._vgpu(function, functions, type_id)
        else:
            deployable = self._pgpu(function)
        return records.device(
            function, self.device_type,
            self.function_name(pciids.database(self.conf), function),
            [deployable])

    def own_name(self, function):
        """The model the ``nvidia`` driver shows (``NVIDIA H200``)."""
        return vendor_info.nvidia_model(self.reader, function)

    def _pgpu(self, function):
        if function.has_vfs_enabled:
            raise base.NotReady('SR-IOV VFs are enabled; it is not offered '
                                'as a whole GPU',
                                action='list it in [vgpu_<type>] '
                                       'device_addresses to offer vGPUs')
        if function.driver not in PASSTHROUGH_DRIVERS:
            raise base.NotReady(
                'bound to kernel driver %s' % function.driver,
                action='bind it to vfio-pci to offer it whole')
        mdev_types = self.reader.mdev_types(function.address)
        if any(t.devices for t in mdev_types.values()):
            raise base.NotReady(
                'mdevs exist on it; it is not offered as a whole GPU',
                action='remove its mdevs, or list it in [vgpu_<type>] '
                       'device_addresses to offer its vGPUs')
        if mdev_types:
            raise base.NotReady(
                'the vGPU host driver manages it (it offers vGPU types %s) '
                'and no vGPU type is configured for it'
                % ', '.join(sorted(mdev_types)),
                action='enable one of its types in [gpu_devices] '
                       'enabled_vgpu_types and list the GPU in [vgpu_<type>]'
                       ' device_addresses, or bind it to vfio-pci to offer '
                       'it whole')
        traits = [records.OWNER_CYBORG,
                  records.custom_name('NVIDIA', function.product)]
        return records.deployable(self.host, function.address, PGPU, traits,
                                  [records.pci_handle(function.address)],
                                  driver_name=DRIVER_NAME)

    def _vgpu(self, function, functions, type_id):
        vfs = [functions[a] for a in function.virtfns if a in functions]
        if any(os.path.exists(self.reader.path(
                vf.address, 'nvidia', 'current_vgpu_type')) for vf in vfs):
            return self._vendor_vgpu(function, vfs, type_id)
        # SR-IOV vGPU (Ampere): the mdev types live on the VFs.
        holders = vfs if function.virtfns else [function]
        handles, mdev_name = [], None
        for holder in holders:
            mdev_type = self.reader.mdev_types(holder.address).get(type_id)
            if mdev_type is None:
                continue
            mdev_name = mdev_type.name
            for _slot in range(mdev_type.available_instances +
                               len(mdev_type.devices)):
                handles.append(records.mdev_handle(holder.address, type_id,
                                                   len(handles)))
        if mdev_name is None:
            if not function.virtfns and function.sriov_totalvfs:
                raise base.NotReady(
                    'vGPU type %s is not on this GPU and its SR-IOV VFs are '
                    'not enabled; enable them (NVIDIA\'s sriov-manage -e '
                    '%s)' % (type_id, function.address))
            raise base.NotReady('vGPU type %s is not supported by this GPU '
                                'or its VFs' % type_id)
        if not handles:
            raise base.NotReady('vGPU type %s has no instances on it'
                                % type_id, setup_required=False)
        traits = [records.OWNER_CYBORG,
                  vgpu_trait_name(function.product, mdev_name, type_id)]
        return records.deployable(self.host, function.address, VGPU, traits,
                                  handles, driver_name=DRIVER_NAME)

    def _vendor_vgpu(self, function, vfs, type_id):
        """Vendor-specific VFIO: the VFs of ``function`` that carry vGPU
        type ``type_id``, after giving it to the free VFs that can take
        it and that a VM can have (nothing is written to one it cannot:
        no IOMMU group, a group shared with the host's devices)."""
        number = vgpu_type_number(type_id)
        if number is None:
            raise base.NotReady(
                'its VFs take vGPU types by number; name the type '
                'nvidia-<number> (from the VFs\' nvidia/creatable_vgpu_types)'
                ' in [gpu_devices] enabled_vgpu_types')
        handles, refused = [], None
        together = [vf.address for vf in vfs]
        for vf in vfs:
            try:
                state = self.reader.vendor_vgpu(vf.address)
            except sysfs.UnreadableFunction as e:
                self.decline(vf, 'a VF of GPU %s whose vGPU state cannot '
                             'be read: %s' % (function.address, e))
                continue
            if state is None:
                continue
            current, refusal = self._give_type(vf, state, number, together)
            refused = refusal or refused
            if current == number:
                handles.append(records.pci_handle(vf.address))
            elif current:
                self.decline(vf, 'a VF of GPU %s carrying vGPU type %d, '
                             'not the type %d the GPU is listed for' % (
                                 function.address, current, number),
                             'remove its vGPU type (write 0 to '
                             'nvidia/current_vgpu_type)')
        if not handles and refused is not None:
            raise base.NotReady('no VF was given vGPU type %d: %s' % (
                number, refused.reason), action=refused.action)
        if not handles:
            raise base.NotReady(
                'no VF can take vGPU type %d now (nvidia/creatable_vgpu_types'
                ' of its free VFs does not list it); a MIG-backed type needs '
                'MIG mode on and free GPU instances' % number)
        traits = [records.OWNER_CYBORG,
                  records.custom_name('NVIDIA', function.product, 'VGPU',
                                      number)]
        return records.deployable(self.host, function.address, VGPU, traits,
                                  handles, driver_name=DRIVER_NAME)

    def _give_type(self, vf, state, number, together):
        """``(type, refusal)``: the vGPU type ``vf`` (whose vendor vGPU
        state is ``state``) carries once given type ``number`` if it is
        free and can take it. A free VF that a VM cannot have, handed out
        with the VFs in ``together``, is declined and left free: nothing
        is written to it, and the Refusal says why."""
        if state.current != 0 or number not in state.creatable:
            return state.current, None
        refusal = self.refusal(vf, together)
        if refusal is not None:
            self.decline(vf, refusal.reason, refusal.action)
            return 0, refusal
        return self._carve(vf, number), None

    def _carve(self, vf, number):
        """Give the free ``vf`` vGPU type ``number``; the type it carries
        afterwards (0 if the kernel refused)."""
        try:
            privileged.set_vgpu_type(str(vf.address), number)
            state = self.reader.vendor_vgpu(vf.address)
        except (OSError, sysfs.UnreadableFunction) as e:
            LOG.warning('Could not give VF %s vGPU type %d: %s', vf.address,
                        number, e)
            return 0
        if state is not None and state.current == number:
            LOG.info('VF %s now carries vGPU type %d', vf.address, number)
            return number
        return state.current if state else 0

    # mdevs, created when an ARQ for a vGPU is bound and removed when it is
    # unbound, by writing to sysfs through privsep.

    def create_mdev(self, pci_address, mdev_type, mdev_uuid):
        """Create the mdev; True if created, False if it existed. The
        arguments were checked by the agent (and are again by privsep)."""
        if os.path.exists(self.reader.path(pci_address, mdev_uuid)):
            return False
        if mdev_type not in self.reader.mdev_types(pci_address):
            raise base.OperationFailed('%s has no vGPU type %s' % (
                pci_address, mdev_type))
        privileged.create_mdev(pci_address, mdev_type, mdev_uuid)
        # Nova 34 finds it under libvirt's name and creates no other.
        LOG.info('Created mdev %s of type %s on %s (libvirt node device %s)',
                 mdev_uuid, mdev_type, pci_address,
                 mdev.libvirt_name(mdev_uuid, pci_address))
        return True

    def remove_mdev(self, pci_address, mdev_type, mdev_uuid):
        if not os.path.exists(self.reader.path(pci_address, mdev_uuid,
                                               'remove')):
            return
        privileged.remove_mdev(pci_address, mdev_uuid)
        LOG.info('Removed mdev %s of type %s from %s', mdev_uuid, mdev_type,
                 pci_address)
