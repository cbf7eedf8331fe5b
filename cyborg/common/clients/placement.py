"""Placement through openstacksdk, configured by the [placement] options.

Every request names its microversion; any answer that is not a success
becomes exception.PlacementError with the status and Placement's detail.
"""

from keystoneauth1 import loading as ks_loading
import openstack

from cyborg.common import exception

GROUP = 'placement'


def connect(conf):
    """An openstacksdk Placement proxy (a keystoneauth adapter)."""
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    connection = openstack.connection.Connection(session=session,
                                                 oslo_conf=conf)
    return connection.placement


def _check(response, method, url):
    if response.status_code >= 400:
        try:
            detail = '; '.join(e.get('detail', '') for e in
                               response.json().get('errors', []))
        except ValueError:
            detail = response.text[:200]
        raise exception.PlacementError(method=method, url=url,
                                       status=response.status_code,
                                       detail=detail)
    return response


def find_provider(client, name):
    """The provider named ``name`` as a dict, or None."""
    url = '/resource_providers?name=%s' % name
    response = _check(client.get(url, microversion='1.14',
                                 raise_exc=False), 'GET', url)
    providers = response.json()['resource_providers']
    return providers[0] if providers else None


def create_provider(client, name, uuid=None, parent_uuid=None):
    body = {'name': name}
    if uuid:
        body['uuid'] = uuid
    if parent_uuid:
        body['parent_provider_uuid'] = parent_uuid
    response = _check(client.post('/resource_providers', json=body,
                                  microversion='1.20', raise_exc=False),
                      'POST', '/resource_providers')
    return response.json()
