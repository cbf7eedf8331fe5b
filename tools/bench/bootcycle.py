"""Nova's boot cycle against a cyborg API, as the benchmarks drive it.

:func:`boot_cycle` is one server's accelerator lifecycle as Nova sends
it (no microversion header, user and service token): GET the device
profile by name, POST the ARQs, PATCH bind, GET
``?instance=&bind_state=resolved`` until 200, the instance's events
received by Nova (a :class:`cyborg.sim.nova.FakeNova`), DELETE
``?instance=``. :class:`Cycles` runs many, some at once;
:func:`bench_lists` times the list of deployables; :func:`target_ready`
finds what to boot on in a deployment the benchmark did not start.
"""

import concurrent.futures
import json
import statistics
import threading
import time
import uuid

import requests

# Projects are 32-hex ids, as Keystone's are (upstream refuses others).
NOVA_HEADERS = {'X-User-Id': 'nova',
                'X-Project-Id': 'a1b2c3d4e5f60718293a4b5c6d7e8f90',
                'X-Roles': 'member,reader', 'X-Service-Roles': 'service',
                'Content-Type': 'application/json'}
ADMIN_HEADERS = {'X-User-Id': 'admin',
                 'X-Project-Id': '0a0b0c0d0e0f00010203040506070809',
                 'X-Roles': 'admin,member,reader',
                 'Content-Type': 'application/json'}
PROFILE = 'bench-fpga'
PROFILE_BODY = [{'name': PROFILE, 'groups': [
    {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]}]
# How long a cycle waits for its events before it counts as failed.
EVENT_WAIT_S = 30


def percentile(samples, fraction):
    ordered = sorted(samples)
    if not ordered:
        return None
    index = min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))
    return ordered[index]


def summary(samples_s):
    return {'p50_ms': round(1000 * percentile(samples_s, 0.5), 2),
            'p99_ms': round(1000 * percentile(samples_s, 0.99), 2),
            'mean_ms': round(1000 * statistics.mean(samples_s), 2),
            'n': len(samples_s)}


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


class Client:
    """One HTTP session per thread, like one nova-conductor worker."""

    def __init__(self, base):
        self.base = base
        self.local = threading.local()

    @property
    def session(self):
        if not hasattr(self.local, 'session'):
            self.local.session = requests.Session()
        return self.local.session

    def call(self, method, path, headers, body=None, ok=(200,)):
        response = self.session.request(
            method, self.base + path, headers=headers,
            data=None if body is None else json.dumps(body), timeout=60)
        if response.status_code not in ok:
            raise RuntimeError('%s %s: %s %s' % (method, path,
                                                 response.status_code,
                                                 response.text[:200]))
        return response


def list_deployables(client):
    response = client.call('GET', '/v2/deployables', ADMIN_HEADERS)
    return len(response.json()['deployables'])


def bench_lists(client, count, threads, window_s):
    latencies = [timed(list_deployables, client)[0] for _ in range(count)]
    done = [0]
    lock = threading.Lock()
    deadline = time.perf_counter() + window_s

    def worker():
        while time.perf_counter() < deadline:
            list_deployables(client)
            with lock:
                done[0] += 1

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(worker) for _ in range(threads)]:
            future.result()
    elapsed = time.perf_counter() - start
    return summary(latencies), round(done[0] / elapsed, 1)


STEPS = ('profile', 'create', 'bind', 'resolved', 'event', 'delete')

#: Seconds between two GETs of a boot's ARQs until they are resolved.
POLL_S = [0.005]


def wait_resolved(client, instance):
    """Poll, as Nova does, until the ARQs of ``instance`` are resolved;
    they must be bound."""
    query = '/v2/accelerator_requests?instance=%s&bind_state=resolved'
    for _ in range(600):
        response = client.call('GET', query % instance, NOVA_HEADERS,
                               ok=(200, 423))
        if response.status_code == 200:
            break
        time.sleep(POLL_S[0])
    else:
        raise RuntimeError('ARQs of %s never resolved' % instance)
    states = {arq['state'] for arq in response.json()['arqs']}
    if states != {'Bound'}:
        raise RuntimeError('ARQs of %s ended %s' % (instance, states))


def wait_events(nova, instance, count):
    """Wait until ``nova`` got ``count`` events of ``instance``, all
    completed."""
    events = nova.wait_for(instance, count, EVENT_WAIT_S)
    if events is None:
        raise RuntimeError('Nova got no event for %s' % instance)
    if {e['status'] for e in events} != {'completed'}:
        raise RuntimeError('events of %s: %s' % (instance, events))


def boot_cycle(client, provider, nova=None, steps=None):
    """One server's accelerator lifecycle as Nova drives it, on
    ``provider`` (``[rp_uuid, hostname]``: a bind names the provider's
    own host, or it is refused); with
    ``nova`` (a FakeNova) it waits for the instance's events too. The
    seconds of each of STEPS go to ``steps`` (``event``: the wait for the
    events once the ARQs were seen resolved)."""
    marks = [time.perf_counter()]

    def step():
        marks.append(time.perf_counter())

    rp_uuid, hostname = provider
    instance = str(uuid.uuid4())
    profiles = client.call('GET', '/v2/device_profiles?name=%s' % PROFILE,
                           NOVA_HEADERS).json()['device_profiles']
    if len(profiles) != 1:
        raise RuntimeError('profile %s: %d found' % (PROFILE,
                                                      len(profiles)))
    step()
    arqs = client.call('POST', '/v2/accelerator_requests', NOVA_HEADERS,
                       {'device_profile_name': PROFILE},
                       ok=(201,)).json()['arqs']
    step()
    patch = {arq['uuid']: [
        {'op': 'add', 'path': '/hostname', 'value': hostname},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
        for arq in arqs}
    client.call('PATCH', '/v2/accelerator_requests', NOVA_HEADERS, patch,
                ok=(202,))
    step()
    wait_resolved(client, instance)
    step()
    if nova is not None:
        wait_events(nova, instance, len(arqs))
    step()
    client.call('DELETE', '/v2/accelerator_requests?instance=%s' % instance,
                NOVA_HEADERS, ok=(204,))
    step()
    if steps is not None:
        for name, begin, end in zip(STEPS, marks[:-1], marks[1:],
                                    strict=True):
            steps[name].append(end - begin)
    return instance


class Cycles:
    """``count`` boots, ``concurrency`` at once: their latencies, errors,
    instances and the seconds they took together."""

    def __init__(self, count, concurrency):
        self.count = count
        self.concurrency = concurrency
        self.latencies, self.errors, self.instances = [], [], []
        self.steps = {name: [] for name in STEPS}
        self.seconds = 0.0

    def run(self, client, rp_uuids, nova=None):
        """Each worker boots on providers of its own, as Placement would
        pick, when there are enough."""
        lock = threading.Lock()

        def worker(index):
            mine = rp_uuids[index::self.concurrency] or rp_uuids
            for n in range(index, self.count, self.concurrency):
                try:
                    elapsed, instance = timed(boot_cycle, client,
                                              mine[n % len(mine)], nova,
                                              self.steps)
                except Exception as e:
                    with lock:
                        self.errors.append(str(e))
                    continue
                with lock:
                    self.latencies.append(elapsed)
                    self.instances.append(instance)

        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            for future in [pool.submit(worker, i)
                           for i in range(self.concurrency)]:
                future.result()
        self.seconds = time.perf_counter() - start
        return self

    def add(self, other):
        """These boots and those of ``other`` (another round of the same
        phase): their latencies, errors, instances and seconds together."""
        self.count += other.count
        self.latencies += other.latencies
        self.errors += other.errors
        self.instances += other.instances
        for name, times in other.steps.items():
            self.steps[name] += times
        self.seconds += other.seconds
        return self

    def numbers(self):
        return {'summary': summary(self.latencies) if self.latencies
                else None,
                'errors': len(self.errors),
                'boots_per_s': round(len(self.latencies) / self.seconds, 1)
                if self.seconds else None,
                'steps_p50_ms': {
                    name: round(1000 * percentile(times, 0.5), 1)
                    for name, times in self.steps.items() if times}}




def target_ready(url):
    """What a server process would have said, of the deployment at
    ``url``: its providers, after making the profile if missing."""
    client = Client(url)
    found = client.call('GET', '/v2/device_profiles?name=%s' % PROFILE,
                        ADMIN_HEADERS).json()['device_profiles']
    if not found:
        client.call('POST', '/v2/device_profiles', ADMIN_HEADERS,
                    PROFILE_BODY, ok=(201,))
    deployables = client.call('GET', '/v2/deployables',
                              ADMIN_HEADERS).json()['deployables']
    # cyborg's v1 API says the host of each deployable, and a bind must
    # name it; upstream has no v1 API and does not check the host.
    response = client.call('GET', '/v1/accelerators', ADMIN_HEADERS,
                           ok=(200, 404))
    hosts = ({a['deployable_uuid']: a['host']
              for a in response.json()['accelerators']}
             if response.status_code == 200 else {})
    return {'base_url': url, 'database': 'target', 'seed_s': 0,
            'rp_uuids': [[d['rp_uuid'], hosts.get(d['uuid'], 'bench-host')]
                         for d in deployables if d.get('rp_uuid')]}


def target_events(url, instances):
    """How many events the Nova stand-in at ``url`` (a record of events,
    or None) got for ``instances``."""
    if not url:
        return None
    events = requests.get(url, timeout=60).json()['events']
    wanted = set(instances)
    return sum(1 for e in events if e.get('server_uuid') in wanted)
