"""A driver for an accelerator that is not there.

It reports one FPGA-typed card with 16 functions on every host, so the
all-in-one and functional tests run the whole flow without hardware.
With ``[fake_driver] hold_dir`` set, programming waits half-way until the
test releases it (see :func:`hold`).
"""

import hashlib
import itertools
import json
import os
import re
import time

from cyborg.accelerator.common import pci
from cyborg.accelerator.drivers import base
from cyborg.objects import driver_device as dd

#: The card's made-up PCI address (its control path) and, as upstream's
#: dict of strings, what its control path id holds.
CARD_ADDRESS = pci.PciAddress(0, 0x0c, 0, 0)
PCI_ADDRESS = CARD_ADDRESS.as_dict()
NUM_FUNCTIONS = 16
# Ids in the form real drivers report them (four lower-case hex digits,
# as sysfs has them); no vendor has these.
VENDOR_ID = 'abcd'
PRODUCT_ID = 'fa16'
# PCI class 12: processing accelerator.
CLASS_CODE = '120000'
MODEL = 'Fake FPGA card (%d functions)' % NUM_FUNCTIONS
RESOURCE_CLASS = 'FPGA'
TRAIT = 'CUSTOM_FAKE_DEVICE'
DRIVER_NAME = 'FAKEDRIVER'
EMPTY_SHA256 = hashlib.sha256(b'').hexdigest()
RELEASE = 'release'
# How often a held operation looks for the release file.
HOLD_POLL = 0.05
_HOLDS = itertools.count(1)


def hold(directory):
    """Announce a held operation in ``directory`` (a file "held-<pid>-<n>")
    and wait until a file named "release" appears there. Nothing when
    ``directory`` is not set."""
    if not directory:
        return
    marker = os.path.join(directory, 'held-%d-%d' % (os.getpid(),
                                                     next(_HOLDS)))
    with open(marker, 'w'):
        pass
    release = os.path.join(directory, RELEASE)
    while not os.path.exists(release):
        time.sleep(HOLD_POLL)


def _pci_info(function):
    return CARD_ADDRESS._replace(function=function).to_json()


#: How OpenStack Cyborg's fake driver writes the card's address.
UPSTREAM_CPID_INFO = ('{"domain":"0000","bus":"0c","device":"00",'
                      '"function":"0"}')


def upstream_card(host):
    """The card as OpenStack Cyborg's fake driver reports it on ``host``,
    field for field: so the first report of a host adopted from a cloud
    that ran it changes nothing (``[fake_driver] report_as``)."""
    handles = [dd.DriverAttachHandle(
        attach_type='TEST_PCI', in_use=False, attach_info=json.dumps({
            'domain': '0000', 'bus': '0c', 'device': str(function // 8),
            'function': str(function % 8)}))
        for function in range(1, NUM_FUNCTIONS + 1)]
    deployable = dd.DriverDeployable(
        name=re.sub(r'[^A-Za-z0-9_-]', '_', '%s_FakeDevice' % host),
        num_accelerators=NUM_FUNCTIONS, driver_name='fake',
        attribute_list=[dd.DriverAttribute(key='traits1', value=TRAIT),
                        dd.DriverAttribute(key='rc', value=RESOURCE_CLASS)],
        attach_handle_list=handles)
    return dd.DriverDevice(
        vendor='0xABCD', model='miss model info', type='FPGA',
        std_board_info=json.dumps({'device_id': '0xabcd',
                                   'class': 'Fake class'}),
        vendor_board_info='fake_vendor_info',
        controlpath_id=dd.DriverControlPathID(
            cpid_type='PCI', cpid_info=UPSTREAM_CPID_INFO),
        deployable_list=[deployable], stub=False)


class FakeDriver(base.AcceleratorDriver, base.Programmer, base.Installer):

    device_type = 'FPGA'
    driver_name = DRIVER_NAME

    def __init__(self, conf):
        super().__init__(conf)
        #: {control path info: sha256 of the bitstream last loaded}
        self.programmed = {}
        #: control path infos of the devices set up
        self.set_up = set()

    def _check_card(self, controlpath_id):
        info = controlpath_id.get('cpid_info')
        if info not in (CARD_ADDRESS.to_json(), UPSTREAM_CPID_INFO):
            raise base.OperationFailed('no fake card at %s' % info)
        return info

    def setup(self, controlpath_id):
        self.set_up.add(self._check_card(controlpath_id))

    def program(self, controlpath_id, image_path):
        """Check what a real driver would, and remember the bitstream."""
        info = self._check_card(controlpath_id)
        hold(self.conf.fake_driver.hold_dir)
        with open(image_path, 'rb') as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest == EMPTY_SHA256:
            raise base.OperationFailed('the bitstream is empty')
        self.programmed[info] = digest

    def deployable_name(self):
        return re.sub(r'[^A-Za-z0-9_-]', '_', self.conf.host) + '_FakeDevice'

    def discover(self):
        if self.conf.fake_driver.report_as == 'upstream':
            return [upstream_card(self.conf.host)]
        handles = [dd.DriverAttachHandle(attach_type='TEST_PCI',
                                         attach_info=_pci_info(function),
                                         in_use=False)
                   for function in range(1, NUM_FUNCTIONS + 1)]
        deployable = dd.DriverDeployable(
            name=self.deployable_name(), num_accelerators=NUM_FUNCTIONS,
            driver_name=DRIVER_NAME,
            attribute_list=[dd.DriverAttribute(key='rc',
                                               value=RESOURCE_CLASS),
                            dd.DriverAttribute(key='trait0', value=TRAIT)],
            attach_handle_list=handles)
        device = dd.DriverDevice(
            vendor=VENDOR_ID, model=MODEL, type=self.device_type,
            std_board_info=json.dumps({'product_id': PRODUCT_ID,
                                       'class': CLASS_CODE,
                                       'numa_node': None}, sort_keys=True),
            vendor_board_info='fake_vendor_info',
            controlpath_id=dd.DriverControlPathID(
                cpid_type='PCI', cpid_info=CARD_ADDRESS.to_json()),
            deployable_list=[deployable], stub=False)
        return [device]

    def survey(self):
        """The card, offered, in a row like a real driver's: its PCI
        address and ids as sysfs would show them."""
        devices = self.discover()
        return devices, [base.hardware_entry(
            CARD_ADDRESS, device, vendor_id=VENDOR_ID, product_id=PRODUCT_ID)
            for device in devices]
