"""cyborg's one privileged context (oslo.privsep).

The agent runs unprivileged; what needs root (writing to sysfs to create
and remove mdevs) runs in a privsep daemon with only the capabilities
below, started on first use through ``privsep-helper`` (root wrap or
sudo, see the systemd unit). Its options are in ``[cyborg_sys_admin]``.
"""

from oslo_privsep import capabilities
from oslo_privsep import priv_context

sys_admin_pctxt = priv_context.PrivContext(
    'cyborg',
    cfg_section='cyborg_sys_admin',
    pypath=__name__ + '.sys_admin_pctxt',
    capabilities=[capabilities.CAP_SYS_ADMIN,
                  capabilities.CAP_DAC_OVERRIDE],
)
