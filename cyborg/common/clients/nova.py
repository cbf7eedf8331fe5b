"""Nova, for two things: the ``accelerator-request-bound`` external events
that tell nova-compute an ARQ is bound (or failed), and which servers
exist (for the stuck-ARQ check), through openstacksdk's compute proxy
with the ``[nova]`` keystoneauth options.

A conductor keeps ONE :class:`Client`: building the proxy costs a version
discovery request and a keystoneauth session, so it is built on first use
and reused for every event after, and built again only after Nova refused
its credentials (or the client itself failed), in case the cause was the
client's own state.
"""

import threading
from urllib import parse

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging
import openstack

from cyborg.common.clients import environment
from cyborg.common import exception

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
# Nova refused the credentials: the client is built again next time.
_AUTH_REFUSED = frozenset([401, 403])

# Listing servers: from 2.69 a server of a cell that does not answer is
# listed with status UNKNOWN rather than left out (which would read as
# gone). The ``uuid`` filter is an administrator's (Nova's policy
# ``allow_all_filters``), as is ``all_tenants``.
SERVERS_MICROVERSION = '2.69'
DELETED = 'DELETED'


def configured(conf):
    return bool(conf.nova.auth_type)


def connect(conf):
    """A new compute proxy: a keystoneauth session, and a version
    discovery request to Nova on first use of the proxy."""
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    environment.settle(session)
    return openstack.connection.Connection(session=session,
                                           oslo_conf=conf).compute


def connect_retries(conf):
    """How often a request is tried again after a connection error or a
    timeout: ``[nova] connect_retries``, or none when it is unset (as
    keystoneauth does). Given with each request: openstacksdk 4.10 (the
    pin of OpenStack 2026.1) gives every request 1 over the configured
    value, which tries a timed out request again, doubling [nova]
    timeout."""
    return conf[GROUP].connect_retries or 0


def events(instance_uuid, arq_states):
    """The events of one instance: ``arq_states`` is ``{uuid: status}``
    with status ``completed`` or ``failed``."""
    return [{'name': EVENT, 'server_uuid': instance_uuid, 'tag': uuid,
             'status': status} for uuid, status in sorted(arq_states.items())]


def _tags(event_list):
    return {event['tag'] for event in event_list}


def delivered_tags(response, event_list):
    """The tags (ARQ uuids) of ``event_list`` that Nova took, or that it
    can never take (their instance is gone or not on a host), from its
    answer to the request that carried them."""
    if response.status_code == 200:
        return _tags(event_list)
    if response.status_code == _NO_INSTANCE:
        LOG.info('Nova has none of the instances of these %s events; they '
                 'are dropped', EVENT)
        return _tags(event_list)
    if response.status_code != 207:
        return set()
    try:
        answers = response.json().get('events', [])
    except ValueError:
        return set()
    # Nova answers each event in order; the tag says which it is.
    return {answer.get('tag') for answer in answers
            if answer.get('code') == 200
            or answer.get('code') in _UNDELIVERABLE} & _tags(event_list)


def servers_path(uuids):
    """The request that lists the servers of ``uuids``, in any project,
    deleted ones left out."""
    query = [('all_tenants', '1')] + [('uuid', u) for u in sorted(uuids)]
    return '/servers/detail?' + parse.urlencode(query)


def shown_servers(uuids, response):
    """``{uuid: status}`` of the servers of ``uuids`` that Nova's answer
    to ``servers_path(uuids)`` lists. NovaUnavailable when the answer
    does not say: not a 200, not a server list, or a server not asked
    about (Nova left out the ``uuid`` filter: the user may not use it),
    so that no server is ever taken for gone on a doubtful answer."""
    if response.status_code != 200:
        raise exception.NovaUnavailable(reason='%d %s' % (
            response.status_code, response.text[:200]))
    try:
        servers = response.json()['servers']
        shown = {server['id']: server.get('status') for server in servers}
    except (ValueError, KeyError, TypeError) as e:
        raise exception.NovaUnavailable(
            reason='not a server list: %s' % e) from e
    foreign = sorted(set(shown) - set(uuids))
    if foreign:
        raise exception.NovaUnavailable(
            reason='servers not asked about were listed (%s): the uuid '
                   'filter was ignored; the [nova] user needs to be an '
                   'administrator' % ', '.join(foreign[:3]))
    return shown


class Client:
    """The conductor's Nova client, built once and reused."""

    def __init__(self, conf):
        self.conf = conf
        self._compute = None
        self._lock = threading.Lock()
        #: Proxies built, for tests and benchmarks.
        self.builds = 0

    def _get(self):
        with self._lock:
            if self._compute is None:
                self._compute = connect(self.conf)
                self.builds += 1
            return self._compute

    def _forget(self, compute):
        with self._lock:
            if self._compute is compute:
                self._compute = None

    def send_events(self, event_list):
        """POST the events in one request; returns the tags of those that
        need not be sent again (all of them when no Nova is configured,
        which is logged)."""
        if not configured(self.conf):
            LOG.info('No [nova] credentials: not sending %d %s events',
                     len(event_list), EVENT)
            return _tags(event_list)
        compute = None
        try:
            compute = self._get()
            response = compute.post(
                '/os-server-external-events', json={'events': event_list},
                microversion=MICROVERSION, raise_exc=False,
                connect_retries=connect_retries(self.conf))
        except ks_exceptions.ConnectionError as e:
            LOG.warning('Nova could not be reached for %s events: %s', EVENT,
                        e)
            return set()
        except Exception as e:  # auth, discovery, the catalog: build again
            LOG.warning('Nova could not be asked to take %s events: %s',
                        EVENT, e)
            if compute is not None:
                self._forget(compute)
            return set()
        delivered = delivered_tags(response, event_list)
        if len(delivered) < len(event_list):
            LOG.warning('Nova did not take %d of %d %s events: %s %s',
                        len(event_list) - len(delivered), len(event_list),
                        EVENT, response.status_code, response.text[:200])
        if response.status_code in _AUTH_REFUSED:
            self._forget(compute)
        return delivered

    def servers(self, uuids):
        """``{uuid: status}`` of the servers of ``uuids`` that Nova has,
        in one request; a server it does not list is gone (deleted or
        never created). NovaUnavailable when Nova cannot say (no
        ``[nova]`` credentials, an error, a timeout, a refusal)."""
        if not configured(self.conf):
            raise exception.NovaUnavailable(reason='no [nova] credentials')
        compute = None
        try:
            compute = self._get()
            response = compute.get(servers_path(uuids),
                                   microversion=SERVERS_MICROVERSION,
                                   raise_exc=False,
                                   connect_retries=connect_retries(self.conf))
        except ks_exceptions.ConnectionError as e:
            raise exception.NovaUnavailable(reason=str(e)) from e
        except Exception as e:  # auth, discovery, the catalog: build again
            if compute is not None:
                self._forget(compute)
            raise exception.NovaUnavailable(reason=str(e)) from e
        if response.status_code in _AUTH_REFUSED:
            self._forget(compute)
        return shown_servers(uuids, response)
