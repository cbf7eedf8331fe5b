"""Versioned notifications: event type ``cyborg.<object>.<action>`` with a
versioned object as payload, on topic ``versioned_notifications``."""

from oslo_log import log as logging

from cyborg.common import rpc

LOG = logging.getLogger(__name__)


def emit(context, event, priority, payload, publisher=None):
    """Send one notification; a broken notifier is logged, never raised."""
    from cyborg.conf import CONF
    if not rpc.initialized():
        # Tools that run conductor code without messaging.
        LOG.debug('Messaging is not set up; cyborg.%s not sent', event)
        return
    publisher = publisher or 'cyborg-conductor:%s' % CONF.host
    try:
        notifier = rpc.get_notifier(publisher)
        method = getattr(notifier, priority.lower())
        method(context, 'cyborg.%s' % event, payload.obj_to_primitive())
    except Exception:
        LOG.exception('Could not send notification cyborg.%s', event)
