"""Glance image metadata for FPGA programming, configured by [glance].

The conductor asks Glance (images API v2) for one image by id, or for
the one image whose property ``accel:function_id`` has a value; the agent
downloads the bitstream it programs. Only images of trusted owners
(``[glance] trusted_image_owners``, by default the project of the
[glance] credentials) that are ``active`` are used, whoever else can see
an image, and a download stops at ``[glance] max_image_size`` bytes.
Both go through a keystoneauth adapter built from the [glance] session,
auth and adapter options (endpoint from the catalog, or
``endpoint_override``). Unlike upstream there is no hard-coded
``clouds.yaml`` entry: without [glance] credentials every call fails
with a GlanceUnavailable that says so.
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
    client = ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth,
        service_type=conf[GROUP].service_type or SERVICE_TYPE)
    client.conf = conf
    return client


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


def trusted_owners(client):
    """The projects whose images may be programmed: ``[glance]
    trusted_image_owners``, else the project of the credentials."""
    owners = client.conf[GROUP].trusted_image_owners
    if owners:
        return owners
    project = client.get_project_id()
    if not project:
        raise exception.GlanceUnavailable(
            reason='the [glance] credentials have no project; set [glance] '
                   'trusted_image_owners to the projects whose images may '
                   'be programmed')
    return [project]


def _untrusted(client, image):
    """Why ``image`` may not be programmed; None if it may."""
    if image.get('owner') not in trusted_owners(client):
        return 'its owner %s is not a trusted image owner ([glance] ' \
               'trusted_image_owners)' % image.get('owner')
    if image.get('status') != 'active':
        return 'its status is %s, not active' % image.get('status')
    return None


def get_image(client, image_uuid):
    """The image ``image_uuid`` as Glance shows it (properties are
    top-level keys); ImageNotFound when there is none, ImageNotTrusted
    when it is not an active image of a trusted owner."""
    if not uuidutils.is_uuid_like(image_uuid):
        raise exception.ImageNotFound(image=image_uuid)
    response = _get(client, '/v2/images/%s' % image_uuid)
    if response.status_code == 404:
        raise exception.ImageNotFound(image=image_uuid)
    image = response.json()
    reason = _untrusted(client, image)
    if reason:
        raise exception.ImageNotTrusted(image=image_uuid, reason=reason)
    return image


def find_by_function_id(client, function_id):
    """The one active image of a trusted owner whose ``accel:function_id``
    is ``function_id``; ImageNotUnique, naming them, when there is none
    or more than one."""
    images = {}
    for owner in trusted_owners(client):
        response = _get(client, '/v2/images', params={
            FUNCTION_ID: function_id, 'owner': owner, 'status': 'active'})
        if response.status_code != 404:
            for image in response.json().get('images', []):
                if _untrusted(client, image) is None:
                    images[image['id']] = image
    if len(images) != 1:
        raise exception.ImageNotUnique(
            function_id=function_id, count=len(images),
            images=', '.join('%s (%s, owner %s)' % (
                image['id'], image.get('name'), image.get('owner'))
                for image in images.values()) or 'none')
    return next(iter(images.values()))


def download(client, image_uuid, path, chunk_size=1 << 20):
    """Write the data of image ``image_uuid`` (an active image of a
    trusted owner) to ``path``, at most ``[glance] max_image_size`` bytes;
    when Glance has a hash of it (``os_hash_algo``/``os_hash_value``, or
    the md5 ``checksum``) the data must match it."""
    image = get_image(client, image_uuid)
    limit = client.conf[GROUP].max_image_size
    if (image.get('size') or 0) > limit:
        raise exception.ImageNotTrusted(
            image=image_uuid, reason='its size %d is over [glance] '
            'max_image_size (%d)' % (image['size'], limit))
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
    written = 0
    with open(path, 'wb') as f:
        for chunk in response.iter_content(chunk_size):
            written += len(chunk)
            if written > limit:
                response.close()
                raise exception.ImageNotTrusted(
                    image=image_uuid, reason='its data is larger than '
                    '[glance] max_image_size (%d)' % limit)
            f.write(chunk)
            if digest is not None:
                digest.update(chunk)
    if digest is not None and digest.hexdigest() != expected:
        raise exception.GlanceUnavailable(
            reason='the data of image %s does not match its %s hash' %
            (image_uuid, algorithm))
    return image
