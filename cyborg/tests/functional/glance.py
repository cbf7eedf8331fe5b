"""A stand-in Glance: the images API v2 as far as cyborg uses it (show,
list by property, download), served on a loopback port."""

import hashlib
import json
from urllib import parse
import uuid

from keystoneauth1 import loading as ks_loading

from cyborg.api import server as api_server


class FakeGlance:

    #: The operator's project, owner of the images unless a test says
    #: otherwise, and the trusted owner ``start()`` configures.
    OWNER = 'f0a1b2c3d4e5f60718293a4b5c6d7e8f'

    def __init__(self):
        self.images = {}
        self.data = {}
        self.requests = []

    def add(self, data=None, **properties):
        """A new active image; with ``data``, its bytes and their hash as
        Glance records them."""
        image = dict(dict(owner=self.OWNER, status='active'), **properties)
        image['id'] = str(uuid.uuid4())
        if data is not None:
            self.data[image['id']] = data
            image.setdefault('os_hash_algo', 'sha512')
            image.setdefault('os_hash_value',
                             hashlib.sha512(data).hexdigest())
            image.setdefault('size', len(data))
        self.images[image['id']] = image
        return image

    def __call__(self, environ, start_response):
        path = environ['PATH_INFO']
        query = dict(parse.parse_qsl(environ.get('QUERY_STRING', '')))
        self.requests.append((path, query))
        parts = path.strip('/').split('/')
        status, body = '404 Not Found', {'message': 'not found'}
        if parts in ([''], ['v2']):
            # Version discovery, as openstacksdk's image proxy does it.
            base = '%s://%s' % (environ['wsgi.url_scheme'],
                                environ['HTTP_HOST'])
            status, body = '200 OK', {'versions': [{
                'id': 'v2.16', 'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': base + '/v2/'}]}]}
        elif parts == ['v2', 'images']:
            status, body = '200 OK', {'images': [
                image for image in self.images.values()
                if all(image.get(k) == v for k, v in query.items())]}
        elif parts[:2] == ['v2', 'images'] and len(parts) == 4 and (
                parts[3] == 'file' and parts[2] in self.images):
            if parts[2] not in self.data:
                start_response('204 No Content', [])
                return [b'']
            start_response('200 OK', [
                ('Content-Type', 'application/octet-stream')])
            return [self.data[parts[2]]]
        elif parts[:2] == ['v2', 'images'] and len(parts) == 3:
            image = self.images.get(parts[2])
            if image is not None:
                status, body = '200 OK', image
        start_response(status, [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]

    def start(self, test):
        """Serve it until ``test`` ends; point ``test.conf``'s [glance]
        at it."""
        server = api_server.WSGIServer(self, '127.0.0.1', 0, 2,
                                       name='test-glance')
        server.start()
        test.addCleanup(server.stop)
        test.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='glance')
        test.flags(auth_type='admin_token', token='admin',
                   endpoint='http://127.0.0.1:%d' % server.port,
                   trusted_image_owners=[self.OWNER], group='glance')
        return self
