"""Intel QuickAssist (QAT): a card's VFs, or the PF if none are enabled.

One DriverDevice per PF; one deployable of resource class ``CUSTOM_QAT``
per VF (or for the PF itself when SR-IOV is off), as upstream. Traits say
which services the PF runs: ``CUSTOM_QAT_CRYPTO`` and/or
``CUSTOM_QAT_COMPRESSION`` (from ``qat/cfg_services`` on 4xxx; older
generations run both), plus ``CUSTOM_QAT_PRODUCT_ID_<PF product id>``.
"""

import collections


from cyborg.accelerator.common import records
from cyborg.accelerator.drivers import base


VENDOR_ID = '8086'
RESOURCE_CLASS = 'CUSTOM_QAT'
DRIVER_NAME = 'QAT'
CRYPTO = 'CUSTOM_QAT_CRYPTO'
COMPRESSION = 'CUSTOM_QAT_COMPRESSION'

Product = collections.namedtuple(
    'Product', ['vf_product', 'name', 'pf_driver', 'vf_driver'])

#: PF product id -> its VF id, name and in-kernel PF and VF drivers.
PRODUCTS = {
    '0435': Product('0443', 'DH895xCC', 'dh895xcc', 'dh895xccvf'),
    '37c8': Product('37c9', 'C62x', 'c6xx', 'c6xxvf'),
    '19e2': Product('19e3', 'C3xxx', 'c3xxx', 'c3xxxvf'),
    '4940': Product('4941', '4xxx', '4xxx', '4xxxvf'),
    '4942': Product('4943', '401xx', '4xxx', '4xxxvf'),
}
_SERVICES = {'sym': CRYPTO, 'asym': CRYPTO, 'cy': CRYPTO,
             'dc': COMPRESSION}


class IntelQatDriver(base.SysfsPciDriver):
    """Entry point ``intel_qat_driver``."""

    device_type = 'QAT'
    vendors = (VENDOR_ID,)

    def candidates(self, functions):
        return [f for f in functions.values()
                if f.product in PRODUCTS and not f.is_vf]

    def services(self, function):
        """Service traits of a PF; raises NotReady if it is not running."""
        state = self.reader.read_text(function.address, 'qat', 'state')
        if state == 'down':
            raise base.NotReady('the QAT device is down')
        text = self.reader.read_text(function.address, 'qat',
                                     'cfg_services')
        if text is None:
            return [CRYPTO, COMPRESSION]
        tokens = [t for t in text.replace(',', ';').split(';') if t]
        if not tokens or any(t not in _SERVICES for t in tokens):
            raise base.NotReady('unknown QAT services %r' % text)
        return sorted({_SERVICES[t] for t in tokens})

    def build_device(self, function, functions):
        product = PRODUCTS[function.product]
        if function.driver not in (None, 'vfio-pci', product.pf_driver):
            raise base.NotReady('bound to kernel driver %s, expected %s'
                                % (function.driver, product.pf_driver))
        traits = self.services(function) + [
            records.custom_name('QAT_PRODUCT_ID', function.product)]
        if function.virtfns:
            offered = self._usable_vfs(function, functions, product)
            if not offered:
                raise base.NotReady('none of its VFs can be offered')
        else:
            offered = [function]
        deployables = [
            records.deployable(self.host, f.address, RESOURCE_CLASS, traits,
                               [records.pci_handle(f.address)],
                               driver_name=DRIVER_NAME)
            for f in offered]
        return records.device(function, self.device_type,
                              'Intel QuickAssist %s' % product.name,
                              deployables)

    def _usable_vfs(self, pf, functions, product):
        usable = []
        for address in pf.virtfns:
            vf = functions.get(address)
            if vf is None:
                continue  # unreadable; the reader has said why
            if vf.driver not in (None, 'vfio-pci', product.vf_driver):
                self.decline(vf, 'a VF of QAT %s bound to kernel driver %s'
                             % (pf.address, vf.driver),
                             'bind it to vfio-pci or %s' % product.vf_driver)
                continue
            usable.append(vf)
        return usable
