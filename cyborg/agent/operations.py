"""The device operations the conductor asks of an agent (while it binds
ARQs, programs a deployable or provisions a v1 accelerator): which
loaded driver does one, and what its failure looks like to the
conductor, a DriverOperationFailed with the reason."""

from oslo_log import log as logging

from cyborg.common import exception

LOG = logging.getLogger(__name__)


def capable_driver(drivers, host, operation, capability, driver_name=None):
    """The driver of ``drivers`` (the loaded ones, by entry point name)
    with ``capability`` (and ``driver_name``, the entry point name or the
    one its deployables carry)."""
    for name, driver in drivers.items():
        if not isinstance(driver, capability):
            continue
        if driver_name in (None, name, driver.driver_name):
            return driver
    raise exception.DriverOperationFailed(
        operation=operation, host=host,
        reason='no enabled driver %scan do it (enabled: %s)' % (
            '%s ' % driver_name if driver_name else '',
            ', '.join(sorted(drivers)) or 'none'))


def run(host, operation, function, *args):
    """``function(*args)``; an error other than a cyborg exception (which
    passes as itself) becomes a DriverOperationFailed."""
    try:
        return function(*args)
    except exception.CyborgException:
        raise
    except Exception as e:
        LOG.warning('%s failed: %s', operation, e)
        raise exception.DriverOperationFailed(
            operation=operation, host=host, reason=str(e)) from e
