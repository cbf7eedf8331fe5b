"""What the end-to-end Nova needs around it besides cyborg: small HTTP
stand-ins for Glance and Neutron, and a proxy in front of cyborg that
times every call Nova makes to it.

Each serves on a free loopback port in the test process
(``cyborg.api.server.WSGIServer``) and records unexpected requests, so a
Nova that asks for something new shows up in the test's output.
"""

import copy
import json
import re
import threading
import time
import uuid
from urllib import parse

import requests

from cyborg.api import server as api_server

IMAGE_ID = '6e1c2a4f-3b7d-4c9e-8a15-2f0d9b7e4c31'
_JSON = [('Content-Type', 'application/json')]
_IMAGE_FIELDS = (
    'id', 'name', 'status', 'visibility', 'protected', 'checksum',
    'os_hash_algo', 'os_hash_value', 'owner', 'size', 'virtual_size',
    'min_ram', 'min_disk', 'disk_format', 'container_format', 'created_at',
    'updated_at', 'tags', 'self', 'file', 'schema', 'direct_url',
    'locations', 'os_hidden', 'stores')


def _reply(start_response, status, body=None, headers=()):
    text = b'' if body is None else json.dumps(body).encode()
    start_response('%d %s' % (status, 'OK' if status < 400 else 'Error'),
                   (_JSON if body is not None else []) + list(headers))
    return [text]


def _read_json(environ):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    raw = environ['wsgi.input'].read(length) if length else b''
    return json.loads(raw) if raw else None


class StandIn:
    """A JSON service on a loopback port; ``route`` answers requests."""

    name = 'stand-in'

    def __init__(self):
        self.lock = threading.Lock()
        self.unexpected = []
        self.server = api_server.WSGIServer(self, '127.0.0.1', 0, 16,
                                            name=self.name)

    def start(self):
        self.server.start()
        return self

    def stop(self):
        self.server.stop()

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.server.port

    def __call__(self, environ, start_response):
        method = environ['REQUEST_METHOD']
        path = environ.get('PATH_INFO', '/')
        with self.lock:
            answer = self.route(method, path, environ)
        if answer is None:
            self.unexpected.append('%s %s' % (method, path))
            return _reply(start_response, 404, {'error': 'not here'})
        return _reply(start_response, *answer)


class Glance(StandIn):
    """Glance's v2 image API, in memory: one raw image to boot from, and
    the create/update/upload/delete of the snapshots that shelving makes.
    """

    name = 'stand-in-glance'

    def __init__(self):
        super().__init__()
        self.images = {IMAGE_ID: self._image(
            IMAGE_ID, name='e2e-raw', status='active', size=1024,
            disk_format='raw', container_format='bare')}

    def _image(self, image_id, **fields):
        now = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
        image = {'id': image_id, 'name': None, 'status': 'queued',
                 'visibility': 'public', 'protected': False,
                 'os_hidden': False, 'tags': [], 'min_ram': 0,
                 'min_disk': 0, 'size': None, 'virtual_size': None,
                 'checksum': None, 'disk_format': None,
                 'container_format': None, 'owner': None,
                 'created_at': now, 'updated_at': now,
                 'self': '/v2/images/%s' % image_id,
                 'file': '/v2/images/%s/file' % image_id,
                 'schema': '/v2/schemas/image'}
        image.update(fields)
        return image

    def schema(self):
        return {'name': 'image',
                'properties': {field: {} for field in _IMAGE_FIELDS},
                'additionalProperties': {'type': 'string'},
                'links': [{'rel': 'self', 'href': '{self}'},
                          {'rel': 'enclosure', 'href': '{file}'},
                          {'rel': 'describedby', 'href': '{schema}'}]}

    def route(self, method, path, environ):
        if path in ('', '/', '/versions'):
            return 300, {'versions': [{
                'id': 'v2.16', 'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': self.url + '/v2/'}]}]}
        if path == '/v2/schemas/image':
            return 200, self.schema()
        if path == '/v2/images' and method == 'GET':
            return 200, {'images': list(self.images.values())}
        if path == '/v2/images' and method == 'POST':
            body = _read_json(environ) or {}
            image = self._image(body.pop('id', None) or str(uuid.uuid4()),
                                **body)
            self.images[image['id']] = image
            return 201, image
        match = re.match(r'^/v2/images/([^/]+)(/file)?$', path)
        if not match or match.group(1) not in self.images:
            return (404, {'error': 'no image'}) if match else None
        image = self.images[match.group(1)]
        if match.group(2):
            return self._upload(image, method, environ)
        return self._one_image(image, method, environ)

    @staticmethod
    def _upload(image, method, environ):
        if method != 'PUT':
            return None
        environ['wsgi.input'].read(int(environ.get('CONTENT_LENGTH') or 0))
        image.update(status='active', size=0)
        return 204, None

    def _one_image(self, image, method, environ):
        if method == 'GET':
            return 200, image
        if method == 'DELETE':
            del self.images[image['id']]
            return 204, None
        if method == 'PATCH':
            self._patch(image, _read_json(environ) or [])
            return 200, image
        return None

    @staticmethod
    def _patch(image, operations):
        for op in operations:
            key = op['path'].lstrip('/')
            if op['op'] == 'remove':
                image.pop(key, None)
            else:
                image[key] = op['value']


class Neutron(StandIn):
    """Enough of Neutron's v2.0 API for Nova, in memory: networks, subnets
    and ports that a test adds (``add_network``, ``add_port``) or that it
    creates through the API, listed with Neutron's filters (``id=a&id=b``,
    ``fields=...``), shown, updated (``binding:profile`` is replaced
    whole, as Neutron does) and deleted. A port has the
    ``port_device_profile`` extension's ``device_profile``; binding it to
    a host (``binding:host_id``) gives it the ``binding:vif_type`` of its
    vNIC type. Every list is empty until a test adds something, which is
    all that servers booted with ``networks: none`` need. ``requests``
    records (method, path, body) of every request that changed a port.
    """

    name = 'stand-in-neutron'
    COLLECTIONS = {'networks': 'network', 'subnets': 'subnet',
                   'ports': 'port'}
    #: binding:vif_type of a bound port, by vNIC type.
    VIF_TYPES = {'normal': 'ovs', 'direct': 'hw_veb',
                 'accelerator-direct': 'hw_veb'}

    def __init__(self):
        super().__init__()
        self.items = {collection: {} for collection in self.COLLECTIONS}
        self.requests = []

    def add_network(self, name, physnet=None, cidr='192.0.2.0/24'):
        """A VLAN network on ``physnet`` (a VXLAN one without) with one
        IPv4 subnet; returns the network."""
        network_id, subnet_id = str(uuid.uuid4()), str(uuid.uuid4())
        with self.lock:
            self.items['subnets'][subnet_id] = {
                'id': subnet_id, 'name': name, 'network_id': network_id,
                'ip_version': 4, 'cidr': cidr,
                'gateway_ip': cidr.rsplit('.', 1)[0] + '.1',
                'enable_dhcp': False, 'dns_nameservers': [],
                'host_routes': [], 'allocation_pools': [],
                'ipv6_address_mode': None, 'ipv6_ra_mode': None,
                'subnetpool_id': None, 'tenant_id': None,
                'project_id': None}
            network = self.items['networks'][network_id] = {
                'id': network_id, 'name': name, 'status': 'ACTIVE',
                'admin_state_up': True, 'shared': True,
                'router:external': False, 'mtu': 1500,
                'port_security_enabled': False, 'subnets': [subnet_id],
                'provider:network_type': 'vlan' if physnet else 'vxlan',
                'provider:physical_network': physnet,
                'provider:segmentation_id': 100,
                'tenant_id': None, 'project_id': None}
            return copy.deepcopy(network)

    def add_port(self, network, project, **fields):
        """A port of ``project`` on ``network`` (as add_network returned
        it) with the next free address of its subnet; returns the port."""
        with self.lock:
            port = self._new_port(dict(fields, network_id=network['id'],
                                       tenant_id=project, project_id=project))
            return copy.deepcopy(port)

    def _new_port(self, fields):
        network = self.items['networks'][fields['network_id']]
        subnet = self.items['subnets'][network['subnets'][0]]
        port_id = fields.pop('id', None) or str(uuid.uuid4())
        index = len(self.items['ports']) + 10
        port = {
            'id': port_id, 'name': '', 'status': 'DOWN',
            'admin_state_up': True, 'network_id': network['id'],
            'mac_address': 'fa:16:3e:00:%02x:%02x' % divmod(index, 256),
            'fixed_ips': [{'subnet_id': subnet['id'], 'ip_address':
                           subnet['cidr'].rsplit('.', 1)[0] +
                           '.%d' % index}],
            'device_id': '', 'device_owner': '', 'security_groups': [],
            'binding:vnic_type': 'normal', 'binding:profile': {},
            'binding:host_id': '', 'binding:vif_type': 'unbound',
            'binding:vif_details': {}, 'device_profile': None,
            'port_security_enabled': False, 'tenant_id': None,
            'project_id': None}
        port.update(fields)
        self.items['ports'][port_id] = port
        return port

    def route(self, method, path, environ):
        if path in ('', '/'):
            return 200, {'versions': [{
                'id': 'v2.0', 'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': self.url + '/v2.0/'}]}]}
        match = re.match(r'^/v2\.0/([a-z_-]+)(?:/([^/.]+))?(\.json)?$',
                         path)
        if not match:
            return None
        collection, item_id = match.group(1), match.group(2)
        query = parse.parse_qs(environ.get('QUERY_STRING') or '')
        fields = query.pop('fields', None)
        if collection not in self.COLLECTIONS:
            # Extensions, security groups, floating IPs...: none.
            return (200, {collection.replace('-', '_'): []}) if (
                method == 'GET' and item_id is None) else None
        items = self.items[collection]
        singular = self.COLLECTIONS[collection]
        if method == 'GET' and item_id is None:
            return 200, {collection: [_fields(i, fields)
                                      for i in items.values()
                                      if _matches(i, query)]}
        if item_id is not None and item_id not in items:
            return 404, {'NeutronError': {
                'type': '%sNotFound' % singular.title(),
                'message': '%s %s could not be found' % (singular,
                                                          item_id)}}
        if method == 'GET':
            return 200, {singular: _fields(items[item_id], fields)}
        if collection == 'ports':
            return self._change_port(method, path, item_id, environ)
        return None

    def _change_port(self, method, path, port_id, environ):
        """POST, PUT or DELETE of a port; recorded in ``requests``."""
        body = _read_json(environ) if method in ('POST', 'PUT') else None
        if (method == 'POST') != (port_id is None) or method not in (
                'POST', 'PUT', 'DELETE'):
            return None
        self.requests.append((method, path, copy.deepcopy(body)))
        if method == 'POST':
            return 201, {'port': self._new_port(dict(body['port']))}
        if method == 'DELETE':
            del self.items['ports'][port_id]
            return 204, None
        return 200, {'port': self._update_port(self.items['ports'][port_id],
                                               body['port'])}

    def _update_port(self, port, changes):
        port.update(copy.deepcopy(changes))
        if 'binding:host_id' in changes:
            bound = bool(port['binding:host_id'])
            port['binding:vif_type'] = self.VIF_TYPES.get(
                port['binding:vnic_type'], 'ovs') if bound else 'unbound'
            port['status'] = 'ACTIVE' if bound else 'DOWN'
        return copy.deepcopy(port)

    def port(self, port_id):
        with self.lock:
            return copy.deepcopy(self.items['ports'][port_id])


def _json_or_none(raw):
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _matches(item, query):
    """Whether ``item`` passes Neutron's list filters ``query``
    ({field: [values]}); a field the item lacks filters nothing out, as
    Neutron ignores filters it does not know."""
    for key, values in query.items():
        if key not in item:
            continue
        if str(item[key]) not in values and not (
                isinstance(item[key], bool) and
                str(item[key]).lower() in [v.lower() for v in values]):
            return False
    return True


def _fields(item, fields):
    item = copy.deepcopy(item)
    return {k: v for k, v in item.items() if k in fields} if fields else item


class TimingProxy(StandIn):
    """Forwards every request to ``target`` and records how long each
    took, as the client (Nova) sees it: (method, path, status,
    seconds, start time)."""

    name = 'cyborg-timing-proxy'

    def __init__(self, target):
        super().__init__()
        self.target = target
        self.calls = []
        #: Every exchange whole: method, path, query, request body (JSON
        #: or None), status and answer (JSON or None).
        self.exchanges = []
        # What went wrong between Nova and cyborg: 5xx answers and
        # requests the proxy could not forward.
        self.failures = []
        self.session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=4,
                                                pool_maxsize=32)
        self.session.mount('http://', adapter)
        # While cleared, Nova's binds (PATCH of the ARQ collection) wait
        # here before they go on to cyborg; ``held_binds`` counts them.
        self.binds_gate = threading.Event()
        self.binds_gate.set()
        self.held_binds = 0

    def _hold_bind(self, method, path):
        if (method != 'PATCH' or not path.rstrip('/').endswith(
                '/accelerator_requests') or self.binds_gate.is_set()):
            return
        with self.lock:
            self.held_binds += 1
        self.binds_gate.wait(120)

    def __call__(self, environ, start_response):
        method = environ['REQUEST_METHOD']
        path = environ.get('PATH_INFO', '/')
        self._hold_bind(method, path)
        query = environ.get('QUERY_STRING')
        length = int(environ.get('CONTENT_LENGTH') or 0)
        body = environ['wsgi.input'].read(length) if length else None
        headers = {key[5:].replace('_', '-').title(): value
                   for key, value in environ.items()
                   if key.startswith('HTTP_') and key != 'HTTP_HOST'}
        if environ.get('CONTENT_TYPE'):
            headers['Content-Type'] = environ['CONTENT_TYPE']
        started = time.monotonic()
        url = self.target + path + ('?' + query if query else '')
        try:
            response = self.session.request(method, url, data=body,
                                            headers=headers, timeout=120)
        except requests.RequestException as e:
            # Nova sees a 502, and the test's output says why.
            with self.lock:
                self.calls.append((method, path, 502,
                                   time.monotonic() - started, started))
                self.failures.append('%s %s: %s' % (method, url, e))
            return _reply(start_response, 502, {'error': str(e)})
        elapsed = time.monotonic() - started
        with self.lock:
            self.calls.append((method, path, response.status_code, elapsed,
                               started))
            self.exchanges.append({
                'method': method, 'path': path, 'query': query or '',
                'body': _json_or_none(body),
                'status': response.status_code,
                'answer': _json_or_none(response.content)})
            if response.status_code >= 500:
                self.failures.append('%s %s: %d %s' % (
                    method, url, response.status_code, response.text))
        passed = [(k, v) for k, v in response.headers.items()
                  if k.lower() not in ('connection', 'transfer-encoding',
                                       'content-encoding',
                                       'content-length')]
        start_response('%d %s' % (response.status_code, response.reason),
                       passed)
        return [response.content]

    def calls_since(self, started):
        with self.lock:
            return [copy.copy(c) for c in self.calls if c[4] >= started]
