"""Nova, for one thing: the ``accelerator-request-bound`` external events
that tell nova-compute an ARQ is bound (or failed), through openstacksdk's
compute proxy with the ``[nova]`` keystoneauth options."""

from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging
import openstack

LOG = logging.getLogger(__name__)

GROUP = 'nova'
MICROVERSION = '2.82'
EVENT = 'accelerator-request-bound'
# Per event, Nova answers 422 for an instance not yet on a host (a known
# race at boot) and 404 for an instance that is gone (deleted meanwhile);
# sending again cannot help, so such events count as delivered. A 404 for
# the whole request means none of its instances exists.
_UNDELIVERABLE = frozenset([404, 422])
_NO_INSTANCE = 404


def configured(conf):
    return bool(conf.nova.auth_type)


def connect(conf):
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    return openstack.connection.Connection(session=session,
                                           oslo_conf=conf).compute


def events(instance_uuid, arq_states):
    """The events of one instance: ``arq_states`` is ``{uuid: status}``
    with status ``completed`` or ``failed``."""
    return [{'name': EVENT, 'server_uuid': instance_uuid, 'tag': uuid,
             'status': status} for uuid, status in sorted(arq_states.items())]


def _delivered(response):
    if response.status_code == 200:
        return True
    if response.status_code == _NO_INSTANCE:
        LOG.info('Nova has none of the instances of these %s events; they '
                 'are dropped', EVENT)
        return True
    if response.status_code == 207:
        codes = {event.get('code') for event in
                 response.json().get('events', [])}
        return codes <= {200} | _UNDELIVERABLE
    return False


def send_events(conf, event_list):
    """POST the events; True when Nova took them (or no Nova is
    configured, which is logged), False when they must be sent again."""
    if not configured(conf):
        LOG.info('No [nova] credentials: not sending %d %s events',
                 len(event_list), EVENT)
        return True
    try:
        response = connect(conf).post(
            '/os-server-external-events', json={'events': event_list},
            microversion=MICROVERSION, raise_exc=False)
    except Exception as e:  # keystoneauth's connection errors
        LOG.warning('Nova could not be reached for %s events: %s', EVENT, e)
        return False
    if _delivered(response):
        return True
    LOG.warning('Nova refused %s events with %s: %s', EVENT,
                response.status_code, response.text[:200])
    return False
