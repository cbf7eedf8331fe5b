"""Placement through openstacksdk, configured by the [placement] options.

Every request names its microversion; any answer that is not a success
becomes exception.PlacementError with the status and Placement's detail.
"""

import time
from urllib import parse

from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import openstack

from cyborg.common.clients import environment
from cyborg.common import exception
from cyborg.common import metrics

GROUP = 'placement'
# Connections kept open to Placement: as many as the threads that may
# sync hosts at once (oslo.messaging's RPC executor has 64 by default).
# requests' default of 10 would open and drop a connection per request
# beyond the tenth during a storm of reports.
POOL_SIZE = 64


def connect(conf):
    """An openstacksdk Placement proxy (a keystoneauth adapter) whose
    session keeps up to POOL_SIZE connections open."""
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    for scheme in ('http://', 'https://'):
        session.session.mount(scheme, ks_session.TCPKeepAliveAdapter(
            pool_maxsize=POOL_SIZE))
    environment.settle(session)
    connection = openstack.connection.Connection(session=session,
                                                 oslo_conf=conf)
    return connection.placement


def _check(response, method, url):
    if response.status_code >= 400:
        try:
            errors = response.json().get('errors', [])
        except ValueError:
            errors = [{'detail': response.text[:200]}]
        raise exception.PlacementError(
            method=method, url=url, status=response.status_code,
            detail='; '.join(e.get('detail', '') for e in errors),
            codes=[e.get('code') for e in errors])
    return response


def is_conflict(error, code=None):
    """Whether a PlacementError is a 409, optionally with that error
    code (e.g. 'placement.concurrent_update' for a generation conflict)."""
    kwargs = getattr(error, 'kwargs', {})
    if kwargs.get('status') != 409:
        return False
    return code is None or code in (kwargs.get('codes') or [])


def _counted(method, url, send):
    """``send()``'s response (of ``method`` on ``url``), counted and
    timed by route template and status."""
    route = metrics.placement_route(url)
    started = time.monotonic()
    status = 'error'  # no answer
    try:
        response = send()
        status = str(response.status_code)
    finally:
        metrics.PLACEMENT.labels(method, route, status).inc()
        metrics.PLACEMENT_DURATION.labels(method, route).observe(
            time.monotonic() - started)
    return response


def _send(client, method, url, microversion, **kwargs):
    """The response (any status) of ``client.get``, ``post``, ``put``
    or ``delete`` (``method``), counted."""
    verb = getattr(client, method.lower())
    return _counted(method, url, lambda: verb(
        url, microversion=microversion, raise_exc=False, **kwargs))


def _request(client, method, url, microversion, **kwargs):
    response = _counted(method, url, lambda: client.request(
        url, method, microversion=microversion, raise_exc=False, **kwargs))
    return _check(response, method, url)


def find_provider(client, name):
    """The provider named ``name`` as a dict, or None."""
    url = '/resource_providers?name=%s' % parse.quote(name, safe='')
    response = _check(_send(client, 'GET', url, '1.14'), 'GET', url)
    providers = response.json()['resource_providers']
    return providers[0] if providers else None


def create_provider(client, name, uuid=None, parent_uuid=None):
    body = {'name': name}
    if uuid:
        body['uuid'] = uuid
    if parent_uuid:
        body['parent_provider_uuid'] = parent_uuid
    response = _check(_send(client, 'POST', '/resource_providers', '1.20',
                            json=body),
                      'POST', '/resource_providers')
    return response.json()


def get_provider(client, uuid):
    """The provider ``uuid`` as a dict, or None."""
    url = '/resource_providers/%s' % uuid
    response = _send(client, 'GET', url, '1.14')
    if response.status_code == 404:
        return None
    return _check(response, 'GET', url).json()


def list_tree(client, root_uuid, required=None):
    """Providers in the tree of ``root_uuid`` (optionally having all the
    traits in ``required``), as dicts."""
    url = '/resource_providers?in_tree=%s' % root_uuid
    if required:
        url += '&required=%s' % ','.join(required)
    return _request(client, 'GET', url, '1.18').json()['resource_providers']


def ensure_resource_class(client, name):
    """Create the custom resource class ``name`` if it does not exist."""
    _request(client, 'PUT', '/resource_classes/%s' % name, '1.7')


def ensure_trait(client, name):
    """Create the custom trait ``name`` if it does not exist."""
    _request(client, 'PUT', '/traits/%s' % name, '1.6')


def set_inventories(client, uuid, generation, inventories):
    """Replace a provider's inventories; returns its new generation."""
    body = {'resource_provider_generation': generation,
            'inventories': inventories}
    return _request(client, 'PUT', '/resource_providers/%s/inventories' %
                    uuid, '1.26', json=body).json()[
                        'resource_provider_generation']


# Used when Placement has it; without it the caller falls back to
# requests every supported Placement has (cyborg-status asks for those).
RESHAPER_VERSION = '1.30'
# Attaching instances outside Nova boots (API 2.5) needs 1.36; the
# rest of cyborg works without it.
CANDIDATES_VERSION = '1.36'
CONSUMER_VERSION = '1.28'
OPTIONAL_VERSIONS = (RESHAPER_VERSION, CANDIDATES_VERSION, CONSUMER_VERSION)


def set_many_inventories(client, inventories):
    """Replace the inventories of several providers in one request
    (``POST /reshaper``, with no allocation moved): ``inventories`` is
    ``{uuid: (generation, {rc: inventory})}``."""
    body = {'inventories': {
        uuid: {'resource_provider_generation': generation,
               'inventories': wanted}
        for uuid, (generation, wanted) in inventories.items()},
        'allocations': {}}
    _request(client, 'POST', '/reshaper', RESHAPER_VERSION, json=body)


def set_traits(client, uuid, generation, traits):
    """Replace a provider's traits; returns its new generation."""
    body = {'resource_provider_generation': generation,
            'traits': sorted(traits)}
    return _request(client, 'PUT', '/resource_providers/%s/traits' % uuid,
                    '1.26', json=body).json()['resource_provider_generation']


def delete_provider(client, uuid):
    """Delete a provider; True if it was there. A provider with
    allocations raises PlacementError with status 409."""
    url = '/resource_providers/%s' % uuid
    response = _send(client, 'DELETE', url, '1.26')
    if response.status_code == 404:
        return False
    _check(response, 'DELETE', url)
    return True


# -- provider traits, read (FPGA programming, cyborg.conductor.inventory) --

def get_traits(client, uuid):
    """``(set of trait names, generation)`` of provider ``uuid``, or
    None when there is no such provider."""
    url = '/resource_providers/%s/traits' % uuid
    response = _send(client, 'GET', url, '1.6')
    if response.status_code == 404:
        return None
    body = _check(response, 'GET', url).json()
    return set(body['traits']), body['resource_provider_generation']


# -- provider allocations (detaching v1 accelerators) --

def get_allocations(client, uuid):
    """``{consumer uuid: {resource class: amount}}`` of provider
    ``uuid``, or None when there is no such provider."""
    url = '/resource_providers/%s/allocations' % uuid
    response = _send(client, 'GET', url, '1.0')
    if response.status_code == 404:
        return None
    body = _check(response, 'GET', url).json()
    return {consumer: value.get('resources', {})
            for consumer, value in body['allocations'].items()}


# -- allocations of a consumer (attach-instance, see
# cyborg.conductor.attachments) --


def allocation_candidates(client, query):
    """The first allocation request Placement offers for ``query`` (a
    dict of query parameters, granular groups allowed), or None."""
    url = '/allocation_candidates'
    response = _send(client, 'GET', url, CANDIDATES_VERSION,
                     params=dict(query, limit=1))
    body = _check(response, 'GET', url).json()
    requests = body.get('allocation_requests') or []
    return requests[0] if requests else None


def get_consumer_allocations(client, consumer):
    """``(allocations, generation, project_id, user_id)`` of a consumer;
    ``({}, None, None, None)`` when it has none."""
    url = '/allocations/%s' % consumer
    body = _check(_send(client, 'GET', url, CONSUMER_VERSION), 'GET',
                  url).json()
    return (body.get('allocations', {}), body.get('consumer_generation'),
            body.get('project_id'), body.get('user_id'))


def put_consumer_allocations(client, consumer, allocations, generation,
                             project_id, user_id):
    """Replace a consumer's allocations (``{rp: {'resources': {...}}}``);
    an empty dict removes them. 409 when the generation moved."""
    url = '/allocations/%s' % consumer
    body = {'allocations': allocations, 'consumer_generation': generation,
            'project_id': project_id, 'user_id': user_id}
    _check(_send(client, 'PUT', url, CONSUMER_VERSION, json=body), 'PUT', url)
