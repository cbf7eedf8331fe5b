"""Intel FPGA cards (PACs) through the sysfs of OPAE's kernel drivers.

One DriverDevice per card, whose control path is its physical function
(PF); one deployable of resource class ``FPGA``, named after the PF, for
its partial reconfiguration region. What is handed out: the PF itself, or
its VFs when SR-IOV is enabled (each VF carries a port of the region).

Traits, upstream's names: ``CUSTOM_FPGA_INTEL``,
``CUSTOM_FPGA_INTEL_<PRODUCT>`` for the known cards (``PAC_ARRIA10``...),
``CUSTOM_FPGA_REGION_INTEL_<interface id>`` (the PR interface a bitstream
must be built for) and ``CUSTOM_FPGA_FUNCTION_ID_INTEL_<AFU id>`` for the
accelerator function loaded, ids in upper-case hex.

Both kernel drivers are read: the in-kernel DFL driver (``dfl-pci``,
``fpga_region/region*/dfl-fme.*``) and OPAE's older out-of-tree driver
(``intel-fpga-pci``, ``fpga/intel-fpga-dev.*/intel-fpga-fme.*``). A card
bound to ``vfio-pci`` (passed through, or kept for passthrough) shows no
FME: it is offered whole with the card traits only, and cannot be
programmed from the host. Programming runs OPAE's ``fpgaconf`` on the PF.
"""

import collections
import glob
import os
import string


from cyborg.accelerator.common import records
from cyborg.accelerator.drivers import base
from cyborg.accelerator.drivers import fpga


VENDOR_ID = '8086'
#: Upstream's driver name; the conductor makes it the ``INTEL`` of
#: ``CUSTOM_FPGA_FUNCTION_ID_INTEL_<id>`` after programming.
DRIVER_NAME = 'intel'
VENDOR_TRAIT = 'CUSTOM_FPGA_INTEL'
REGION_TRAIT = 'FPGA_REGION_INTEL'
FUNCTION_TRAIT = 'FPGA_FUNCTION_ID_INTEL'
PASSTHROUGH = 'vfio-pci'
#: The OPAE kernel drivers: in-kernel DFL, and OPAE's out-of-tree one.
OPAE_DRIVERS = ('dfl-pci', 'intel-fpga-pci')
#: Drivers a VF may be bound to and still be handed out.
VF_DRIVERS = frozenset((None, PASSTHROUGH) + OPAE_DRIVERS)

Product = collections.namedtuple('Product', ['trait', 'model'])

#: PF product ids of the known cards. Others are found by their FME.
PRODUCTS = {
    '09c4': Product('PAC_ARRIA10', 'Intel PAC Arria 10 GX'),
    '0b2b': Product('PAC_D5005', 'Intel FPGA PAC D5005'),
    '0b30': Product('PAC_N3000', 'Intel FPGA PAC N3000'),
}

Layout = collections.namedtuple('Layout', ['fme', 'interface_id', 'afu_id'])

#: Globs below a PCI function, per kernel driver: its FPGA management
#: engine (FME), below the FME the PR interface id of each region, and
#: the AFU id of each port.
LAYOUTS = (
    Layout(fme='fpga_region/region*/dfl-fme.*',
           interface_id='dfl-fme-region.*/fpga_region/region*/compat_id',
           afu_id='fpga_region/region*/dfl-port.*/afu_id'),
    Layout(fme='fpga/intel-fpga-dev.*/intel-fpga-fme.*',
           interface_id='pr/interface_id',
           afu_id='fpga/intel-fpga-dev.*/intel-fpga-port.*/afu_id'),
)


def read_ids(paths, root):
    """The 128-bit ids (32 hex digits, the kernel's format) in ``paths``,
    upper-cased; raises NotReady naming the file for anything else."""
    ids = set()
    for path in paths:
        shown = os.path.relpath(path, root)
        try:
            with open(path, encoding='ascii') as f:
                text = f.read().strip()
        except (OSError, UnicodeDecodeError) as e:
            raise base.NotReady('cannot read %s: %s' % (shown, e)) from e
        value = text.replace('-', '')
        if len(value) != 32 or not set(value) <= set(string.hexdigits):
            raise base.NotReady('%s holds %r, not a 128-bit id'
                                % (shown, text))
        ids.add(value.upper())
    return ids


class IntelFpgaDriver(base.SysfsPciDriver, base.Programmer):
    """Entry point ``intel_fpga_driver``."""

    device_type = fpga.DEVICE_TYPE
    driver_name = DRIVER_NAME
    vendors = (VENDOR_ID,)

    def _glob(self, address, pattern):
        return sorted(glob.glob(self.reader.path(address, pattern)))

    def layout(self, function):
        """The layout whose FME ``function`` shows, or None."""
        for layout in LAYOUTS:
            if self._glob(function.address, layout.fme):
                return layout
        return None

    def candidates(self, functions):
        return [f for f in functions.values()
                if not f.is_vf and (f.product in PRODUCTS or
                                    self.layout(f) is not None)]

    def build_device(self, function, functions):
        if function.driver not in OPAE_DRIVERS + (PASSTHROUGH,):
            raise base.NotReady(
                '%s; bind it to %s (or %s to pass it through whole)' % (
                    'bound to kernel driver %s' % function.driver
                    if function.driver else 'bound to no kernel driver',
                    ' or '.join(OPAE_DRIVERS), PASSTHROUGH))
        if function.sriov_numvfs and not function.virtfns:
            raise base.NotReady('sriov_numvfs is %d but no VF is in sysfs'
                                % function.sriov_numvfs)
        handed_out = self._handed_out(function, functions)
        traits = {VENDOR_TRAIT}
        product = PRODUCTS.get(function.product)
        if product is not None:
            traits.add(records.custom_name('FPGA_INTEL', product.trait))
        if function.driver != PASSTHROUGH:
            traits |= self._opae_traits(function, handed_out)
        deployable = records.deployable(
            self.host, function.address, fpga.RESOURCE_CLASS, traits,
            [records.pci_handle(f.address) for f in handed_out],
            driver_name=DRIVER_NAME)
        model = (product.model if product is not None
                 else 'Intel FPGA %s' % function.product)
        return records.device(function, self.device_type, model,
                              [deployable])

    def _handed_out(self, pf, functions):
        """The PF, or its VFs that can be handed out."""
        if not pf.virtfns:
            return [pf]
        usable = []
        for address in pf.virtfns:
            vf = functions.get(address)
            if vf is None:
                continue  # unreadable; the reader has said why
            if vf.driver not in VF_DRIVERS:
                self.decline(vf, 'a VF of FPGA %s bound to kernel driver %s'
                             % (pf.address, vf.driver),
                             'bind it to %s' % ' or '.join(
                                 sorted(d for d in VF_DRIVERS if d)))
                continue
            usable.append(vf)
        if not usable:
            raise base.NotReady('none of its VFs can be offered')
        return usable

    def _opae_traits(self, pf, handed_out):
        """Region traits from the PF's FME, function traits from the ports
        of the PF and of its VFs bound to an OPAE driver."""
        layout = self.layout(pf)
        if layout is None:
            raise base.NotReady(
                'bound to %s but it shows no FPGA management engine in '
                'sysfs; is the %s module loaded?' % (
                    pf.driver, 'dfl-fme' if pf.driver == 'dfl-pci'
                    else 'intel-fpga-fme'))
        root = self.reader.root
        regions = read_ids(
            [path for fme in self._glob(pf.address, layout.fme)
             for path in sorted(glob.glob(os.path.join(
                 fme, layout.interface_id)))], root)
        ports = self._glob(pf.address, layout.afu_id)
        for vf in handed_out:
            if vf.is_vf and vf.driver in OPAE_DRIVERS:
                ports += self._glob(vf.address, layout.afu_id)
        functions = read_ids(ports, root)
        return ({records.custom_name(REGION_TRAIT, i) for i in regions} |
                {records.custom_name(FUNCTION_TRAIT, i) for i in functions})

    def program(self, controlpath_id, image_path):
        """Load a GBS bitstream into the PR region of the card whose PF
        is ``controlpath_id``, with ``fpgaconf``."""
        address = fpga.controlpath_address(controlpath_id)
        function = self.reader.get(address)
        if (function is None or function.vendor != VENDOR_ID or
                function.is_vf):
            raise base.OperationFailed('no Intel FPGA card at %s'
                                       % (address,))
        if self.layout(function) is None:
            raise base.OperationFailed(
                'the Intel FPGA card at %s shows no FPGA management engine '
                '(its kernel driver is %s, OPAE needs %s)'
                % (address, function.driver, ' or '.join(OPAE_DRIVERS)))
        fpga.check_image(image_path)
        fpga.run_tool('fpgaconf', address, image_path)
