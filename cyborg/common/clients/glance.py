"""Glance image metadata for FPGA programming, configured by [glance].

The conductor asks Glance (images API v2) for one image by id, or for
the one image whose property ``accel:function_id`` has a value; the agent
downloads the bitstream it programs. Both go through
a keystoneauth adapter built from the [glance] session, auth and adapter
options (endpoint from the catalog, or ``endpoint_override``). Unlike
upstream there is no hard-coded ``clouds.yaml`` entry: without [glance]
credentials every call fails with a GlanceUnavailable that says so.
"""

import hashlib

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_utils import uuidutils

from cyborg.common import exception

GROUP = 'glance'
SERVICE_TYPE = 'image'
FUNCTION_ID = 'accel:function_id'


def connect(conf):
    """A keystoneauth Adapter for the image service."""
    if not conf[GROUP].auth_type:
        raise exception.GlanceUnavailable(
            reason='[glance] has no credentials; set auth_type and its '
                   'options (as for [placement]) on the conductor.')
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth,
        service_type=conf[GROUP].service_type or SERVICE_TYPE)


def _get(client, url, params=None, stream=False):
    try:
        response = client.get(url, params=params, raise_exc=False,
                              stream=stream)
    except ks_exceptions.ClientException as exc:
        raise exception.GlanceUnavailable(
            reason='GET %s: %s' % (url, exc)) from exc
    if response.status_code >= 400 and response.status_code != 404:
        raise exception.GlanceUnavailable(
            reason='GET %s answered %s: %s' % (
                url, response.status_code, response.text[:200]))
    return response


def get_image(client, image_uuid):
    """The image ``image_uuid`` as Glance shows it (properties are
    top-level keys); ImageNotFound when there is none."""
    if not uuidutils.is_uuid_like(image_uuid):
        raise exception.ImageNotFound(image=image_uuid)
    response = _get(client, '/v2/images/%s' % image_uuid)
    if response.status_code == 404:
        raise exception.ImageNotFound(image=image_uuid)
    return response.json()


def find_by_function_id(client, function_id):
    """The one image whose ``accel:function_id`` is ``function_id``;
    ImageNotUnique when there is none or more than one."""
    response = _get(client, '/v2/images', params={FUNCTION_ID: function_id})
    images = [] if response.status_code == 404 else response.json().get(
        'images', [])
    if len(images) != 1:
        raise exception.ImageNotUnique(function_id=function_id,
                                       count=len(images))
    return images[0]


def download(client, image_uuid, path, chunk_size=1 << 20):
    """Write the data of image ``image_uuid`` to ``path``; when Glance
    has a hash of it (``os_hash_algo``/``os_hash_value``, or the md5
    ``checksum``) the data must match it."""
    image = get_image(client, image_uuid)
    algorithm, expected = image.get('os_hash_algo'), image.get(
        'os_hash_value')
    if not (algorithm and expected) and image.get('checksum'):
        algorithm, expected = 'md5', image['checksum']
    digest = hashlib.new(algorithm) if expected else None
    url = '/v2/images/%s/file' % image_uuid
    response = _get(client, url, stream=True)
    if response.status_code in (204, 404):
        raise exception.GlanceUnavailable(
            reason='image %s has no data' % image_uuid)
    with open(path, 'wb') as f:
        for chunk in response.iter_content(chunk_size):
            f.write(chunk)
            if digest is not None:
                digest.update(chunk)
    if digest is not None and digest.hexdigest() != expected:
        raise exception.GlanceUnavailable(
            reason='the data of image %s does not match its %s hash' %
            (image_uuid, algorithm))
    return image
