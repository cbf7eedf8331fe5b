"""Many simulated compute hosts in one process, speaking the real agent
protocol.

Each host is an agent's :class:`cyborg.agent.reporter.Reporter` (the
hello, the report with its hash and sequence, the heartbeat, the resend
of a report not taken, the state file), signing its messages with its
own host key, on the process's RPC transport (``rpc.init`` first, with a
key store that holds every host's key). What the hosts do not have is a
process, an RPC server and drivers of their own:

* their hardware is one of a few *variants*, surveyed by the real agent
  code (:class:`cyborg.agent.manager.AgentManager`'s survey over its
  drivers): the fake driver's card, captured hosts of
  ``cyborg/tests/data/captures`` read by the GPU and QAT drivers, or
  benchlib-style fake FPGA cards; each host adds up to two fake cards of
  its own, which the trickle of changes adds and removes;
* one scheduler thread runs every host's heartbeat each
  ``heartbeat_interval`` seconds and its periodic rescan each
  ``rescan_interval`` (spread over the interval, not all at once), on a
  pool of ``steady_threads`` workers (the boot storm has ``threads`` of
  its own), and the heartbeats of hosts not registered yet or with a
  report not taken yet (a hello or the report again, which wait for the
  conductor's answer) on another pool as large, so
  that they never hold back the heartbeats of the registered hosts; as
  an agent's periodic task, a host's heartbeat waits for the one before
  it; a rescan runs the survey only when the
  host's hardware changed or a full rescan is due (the agent's own
  :class:`cyborg.agent.changes.ChangeCheck`, fed a change counter instead
  of a sysfs fingerprint);
* ``change_interval`` seconds apart, one live host gains or loses a card;
* :meth:`SimHosts.kill` silences a host (no heartbeat, no rescan), as a
  crashed compute host.

It lives beside the functional tests, not under ``tools/bench``, because
both ``tools/bench/scale`` and a CI test use it and the test package is
importable from both; it fakes hardware only, like the captures.
"""

import concurrent.futures
import heapq
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import types

from cyborg.accelerator.common import capture
from cyborg.agent import manager as agent_manager
from cyborg.agent import reporter as agent_reporter
from cyborg.common import keys
from cyborg.objects import driver_device as dd

#: A heartbeat that begins this many seconds after it was due counts as
#: ``delayed``.
DELAYED_S = 1.0

CAPTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                        'data', 'captures')

#: The hardware variants: (name, enabled drivers, capture file or None,
#: benchlib-style cards). Hosts take them in turn.
VARIANTS = (
    ('fake-card', ('fake_driver',), None, 0),
    ('h100', ('nvidia_gpu_driver',), 'h100-host.json', 0),
    ('two-t4', ('nvidia_gpu_driver', 'intel_qat_driver'),
     'shared-group.json', 0),
    ('fpga-x2', (), None, 2),
    ('fpga-x4', (), None, 4),
)


def fpga_card(hostname, slot):
    """A fake FPGA card of ``hostname`` in PCI slot ``slot`` (bus 0x80 and
    up: clear of the captured trees' and the fake driver's addresses)."""
    address = {'domain': '0000', 'bus': '%02x' % (0x80 + slot),
               'device': '00', 'function': '0'}
    info = json.dumps(address, sort_keys=True)
    deployable = dd.DriverDeployable(
        name='%s_card%d' % (hostname, slot), num_accelerators=1,
        driver_name='FAKEDRIVER',
        attribute_list=[dd.DriverAttribute(key='rc', value='FPGA'),
                        dd.DriverAttribute(key='trait0',
                                           value='CUSTOM_FAKE_DEVICE')],
        attach_handle_list=[dd.DriverAttachHandle(
            attach_type='TEST_PCI', in_use=False, attach_info=info)])
    return dd.DriverDevice(
        vendor='0xABCD', model='sim card', type='FPGA',
        std_board_info=json.dumps({'device_id': '0xabcd'}),
        vendor_board_info='sim',
        controlpath_id=dd.DriverControlPathID(cpid_type='PCI',
                                              cpid_info=info),
        deployable_list=[deployable], stub=False)


def next_due(due, interval, now):
    """When a periodic task due at ``due`` runs next: an interval on, or,
    when that is past already, an interval from ``now``."""
    following = due + interval
    return following if following > now else now + interval


class _Group:
    """A config group with some options of our own."""

    def __init__(self, group, **values):
        self._group = group
        self.__dict__.update(values)

    def __getattr__(self, name):
        return getattr(self._group, name)


class _VariantConf:
    """The configuration one variant's drivers see: ``conf``, with the
    host being surveyed (set before each survey) and the variant's
    sysfs root and drivers."""

    def __init__(self, conf, sysfs_root, drivers, state_file):
        self._conf = conf
        self.host = 'sim-variant'
        self.agent = _Group(conf.agent, sysfs_root=sysfs_root,
                            enabled_drivers=list(drivers),
                            state_file=state_file,
                            resource_provider_name=None)

    def __getattr__(self, name):
        return getattr(self._conf, name)


class Variant:
    """Hardware some hosts share; ``survey(hostname)`` is what the agent
    of that host would report (devices, hardware list)."""

    def __init__(self, conf, work_dir, name, drivers, capture_file, cards):
        self.name = name
        self.cards = cards
        self._lock = threading.Lock()
        self._manager = None
        if not drivers:
            return
        root = '/nonexistent-sysfs'
        if capture_file:
            root = capture.replay(capture.load(os.path.join(
                CAPTURES, capture_file)), os.path.join(work_dir, name))
        self._conf = _VariantConf(conf, root, drivers, os.path.join(
            work_dir, 'variant-%s.json' % name))
        self._manager = agent_manager.AgentManager('sim-variant',
                                                   self._conf)

    def survey(self, hostname):
        devices = [fpga_card(hostname, slot)
                   for slot in range(100, 100 + self.cards)]
        if self._manager is None:
            return devices, []
        with self._lock:
            self._conf.host = hostname
            found, hardware = self._manager._survey()
        return found + devices, hardware


class SimHost:
    """One simulated compute host."""

    def __init__(self, hostname, variant, conf, state_dir, conductor,
                 full_rescan_interval):
        self.hostname = hostname
        self.variant = variant
        self.alive = True
        #: Its heartbeat task runs (a hello, a report or a cast): as an
        #: agent's periodic task, the next one waits for it.
        self.busy = threading.Lock()
        #: Its rescan runs: as the agent's other periodic task (a thread
        #: of its own), the next one waits for it.
        self.rescanning = threading.Lock()
        #: time.monotonic() when its last heartbeat task began (None:
        #: none yet).
        self.last_beat = None
        #: Slots of the cards the trickle added.
        self.extra = set()
        #: Names of its tasks waiting in a pool to run: as an agent's
        #: periodic task, a host has at most one of each waiting.
        self.queued = set()
        #: Bumped with each change: the rescan's "sysfs fingerprint".
        self.generation = 0
        self._base = None
        #: (the ``extra`` set it was computed for, the report hash, the
        #: number of deployables).
        self._hash = None
        agent_conf = types.SimpleNamespace(agent=_Group(
            conf.agent, state_file=os.path.join(
                state_dir, 'agent-%s.json' % hostname),
            sysfs_root='/nonexistent-sysfs',
            full_rescan_interval=full_rescan_interval,
            resource_provider_name=None))
        self.reporter = agent_reporter.Reporter(
            hostname, agent_conf, self.survey, lambda: [], conductor)
        self.reporter.changes.read = lambda: self.generation

    def waits(self):
        """Whether its next heartbeat is a call that waits for the
        conductor's answer: a hello, or a report it has not taken yet
        sent again."""
        reporter = self.reporter
        return (not reporter.registered
                or getattr(reporter, '_pending', None) is not None)

    def survey(self):
        if self._base is None:
            # The variant's hardware does not change: surveyed once.
            self._base = self.variant.survey(self.hostname)
        devices, hardware = self._base
        return (devices + [fpga_card(self.hostname, slot)
                           for slot in sorted(self.extra)], hardware)

    def report_hash(self):
        """The hash of what the host would report now (kept until the
        trickle changes its cards: checking thousands of hosts every
        half second must not survey them all each time)."""
        return self._summary()[1]

    def deployable_count(self):
        """How many deployables the host has now."""
        return self._summary()[2]

    def _summary(self):
        extra = self.extra
        cached = self._hash
        if cached is None or cached[0] is not extra:
            devices, hardware = self.survey()
            cached = self._hash = (
                extra, agent_reporter.report_hash(devices, hardware),
                sum(len(device.deployable_list) for device in devices))
        return cached

    def deployables(self):
        """Names of the deployables the host has now."""
        return sorted(dep.name for device in self.survey()[0]
                      for dep in device.deployable_list)

    def in_sync(self):
        """Whether the conductor accepted the host's current hardware."""
        return self.reporter.accepted_hash == self.report_hash()

    def toggle_card(self, rng):
        """Add a card, or remove one the trickle added."""
        slot = rng.randrange(2)
        # A new set, not changed in place: a survey may be reading it.
        self.extra = self.extra ^ {slot}
        self.generation += 1


class SimHosts:
    """``hostnames`` simulated hosts; see the module's docstring. Their
    keys are made in ``key_dir``, their state files in ``state_dir``
    (a temporary directory when not given)."""

    def __init__(self, conf, hostnames, key_dir, state_dir=None,
                 conductor=None, heartbeat_interval=None,
                 rescan_interval=None, full_rescan_interval=600,
                 change_interval=5.0, threads=16, steady_threads=None,
                 variants=VARIANTS, seed=1, first_index=0):
        from cyborg.conductor import rpcapi as conductor_rpcapi
        if state_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix='cyborg-sim-')
            state_dir = self._tmp.name
        self.heartbeat_interval = (heartbeat_interval
                                   or conf.agent.heartbeat_interval)
        self.rescan_interval = rescan_interval or conf.agent.rescan_interval
        self.change_interval = change_interval
        self.rng = random.Random(seed)
        self.conductor = conductor or conductor_rpcapi.ConductorAPI()
        for hostname in hostnames:
            keys.create(key_dir, keys.host_identity(hostname))
        # Each simulator (several processes may share ``state_dir``) lays
        # out the variants' captured trees in a directory of its own.
        variant_dir = os.path.join(state_dir, 'variants-%d' % first_index)
        os.makedirs(variant_dir, exist_ok=True)
        self.variants = [Variant(conf, variant_dir, *v) for v in variants]
        self.hosts = {}
        for index, hostname in enumerate(hostnames):
            self.hosts[hostname] = SimHost(
                hostname,
                self.variants[(first_index + index) % len(self.variants)],
                conf,
                state_dir, self.conductor, full_rescan_interval)
        self.threads = threads
        # Real agents each have their own thread: a host waiting for an
        # answer (a hello, a report resent) must not hold another's
        # heartbeat back, so the steady state has many more threads than
        # the storm (they wait, they do not compute).
        self.pool = concurrent.futures.ThreadPoolExecutor(
            steady_threads or 4 * threads, thread_name_prefix='simhost')
        # Hellos wait for a conductor (seconds, in a storm): with them on
        # the same pool, the registered hosts' heartbeats queued behind
        # them and their hosts were marked down (seen at 2,000 hosts).
        self.hello_pool = concurrent.futures.ThreadPoolExecutor(
            steady_threads or 4 * threads, thread_name_prefix='simhello')
        #: ``late``: heartbeats skipped, the one before still running;
        #: ``delayed``: heartbeats that began DELAYED_S or more after
        #: they were due (the pool or the CPU behind); ``coalesced``:
        #: tasks not queued because the host's last one still waited in
        #: a pool.
        self.counts = {'heartbeats': 0, 'rescans': 0, 'changes': 0,
                       'errors': 0, 'late': 0, 'delayed': 0,
                       'late_rescans': 0, 'coalesced': 0}
        #: The longest a heartbeat began after it was due (seconds).
        self.delay_max = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._order = itertools.count()
        #: False stops the trickle of changes.
        self.changing = True

    # -- what happens to a host -------------------------------------------

    def _count(self, name):
        with self._lock:
            self.counts[name] += 1

    def _heartbeat(self, host, due=None):
        if not host.alive:
            return
        if not host.busy.acquire(blocking=False):
            # The last one still waits for the conductor.
            self._count('late')
            return
        try:
            started = time.monotonic()
            if due is not None:
                self._delayed(started - due)
            self._safely(host.reporter.keep_alive)
            host.last_beat = started
            self._count('heartbeats')
        finally:
            host.busy.release()

    def _delayed(self, delay):
        with self._lock:
            self.delay_max = max(self.delay_max, delay)
            if delay >= DELAYED_S:
                self.counts['delayed'] += 1

    def reset_delay_max(self):
        """The longest delay from now on (the steady state's)."""
        with self._lock:
            self.delay_max = 0.0

    def _rescan(self, host, due=None):
        if not host.alive:
            return
        if not host.rescanning.acquire(blocking=False):
            # The last one still waits (for the conductor, or for the
            # report the heartbeat resends): rescans must not pile up on
            # the pool, holding its workers from other hosts' heartbeats.
            self._count('late_rescans')
            return
        try:
            self._safely(host.reporter.periodic_rescan)
            self._count('rescans')
        finally:
            host.rescanning.release()

    def _safely(self, task):
        # As the agent's periodic task runner: a failure is counted and
        # the next period tries again.
        try:
            task()
        except Exception:
            self._count('errors')

    def _change(self, _host, due=None):
        if not self.changing:
            return
        alive = [h for h in self.hosts.values() if h.alive]
        if alive:
            self.rng.choice(alive).toggle_card(self.rng)
            self._count('changes')

    def boot(self):
        """Every host starts at once: its hello and first report (its
        first heartbeat sends them), ``threads`` at a time, while the
        hosts already registered send their heartbeats (the steady
        state starts, if not started yet). Returns the seconds until every
        first heartbeat was answered."""
        start = time.monotonic()
        if self._thread is None:
            self.start()
        with concurrent.futures.ThreadPoolExecutor(
                self.threads, thread_name_prefix='simboot') as storm:
            list(storm.map(self._heartbeat, list(self.hosts.values())))
        return time.monotonic() - start

    # -- the steady state ---------------------------------------------------

    def start(self):
        """Heartbeats, rescans and the trickle of changes, in a thread of
        their own until :meth:`stop`."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='simhosts')
        self._thread.start()

    def _schedule(self):
        # The first heartbeats after the boot's: one interval on.
        now = time.monotonic() + self.heartbeat_interval
        queue = []
        count = max(len(self.hosts), 1)
        for index, host in enumerate(self.hosts.values()):
            # Spread over the interval, as agents started at random.
            phase = index / count
            queue.append((now + phase * self.heartbeat_interval,
                          next(self._order), self.heartbeat_interval,
                          self._heartbeat, host))
            if self.rescan_interval:
                queue.append((now + phase * self.rescan_interval,
                              next(self._order), self.rescan_interval,
                              self._rescan, host))
        if self.change_interval:
            queue.append((now + self.change_interval, next(self._order),
                          self.change_interval, self._change, None))
        heapq.heapify(queue)
        return queue

    def _run(self):
        queue = self._schedule()
        while not self._stop.is_set():
            due, _order, interval, task, host = queue[0]
            wait = due - time.monotonic()
            if wait > 0:
                self._stop.wait(min(wait, 0.5))
                continue
            # Behind by a whole interval (the pool or the CPU did not keep
            # up): the next one an interval from now, as an agent's
            # periodic task runs an interval after the last, never to
            # catch up. (Due "now" instead sent a host's tasks back to
            # back, faster the more it was behind: at 5,000 hosts the
            # heartbeats went out at 2.4 times their rate.)
            heapq.heapreplace(queue, (next_due(due, interval,
                                               time.monotonic()),
                                      next(self._order), interval, task,
                                      host))
            if host is None:
                self.pool.submit(task, host, due)
            elif host.alive and self._queue(task, host):
                pool = self.pool
                if task == self._heartbeat and host.waits():
                    pool = self.hello_pool
                pool.submit(self._dequeued, task, host, due)

    def _queue(self, task, host):
        # A host's task still waiting in a pool (the pools behind, as in
        # a storm) takes the place of this one: an agent's periodic task
        # that overran runs once, not once per missed interval. Queuing
        # every interval left a backlog the steady state sent back to
        # back (1,265 messages a second at 5,000 hosts where 500 were
        # due).
        with self._lock:
            if task.__name__ in host.queued:
                self.counts['coalesced'] += 1
                return False
            host.queued.add(task.__name__)
            return True

    def _dequeued(self, task, host, due):
        with self._lock:
            host.queued.discard(task.__name__)
        task(host, due)

    def kill(self, hostname):
        """The host goes silent, as one that crashed."""
        self.hosts[hostname].alive = False

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.hello_pool.shutdown(wait=True, cancel_futures=True)

    # -- what the hosts have ------------------------------------------------

    def out_of_sync(self):
        """Live hosts whose current hardware the conductor has not
        accepted yet."""
        return sorted(h.hostname for h in self.hosts.values()
                      if h.alive and not h.in_sync())

    def deployables(self):
        """{hostname: deployable names} of every host."""
        return {name: host.deployables()
                for name, host in self.hosts.items()}

    def wanted(self):
        """How many deployables the hosts have together."""
        return sum(host.deployable_count() for host in self.hosts.values())

    def last_beat(self, hostname):
        """time.monotonic() when the host's last heartbeat task began."""
        return self.hosts[hostname].last_beat

    def state(self, names=0):
        """What :class:`SimHostProcesses` gathers: the counts, this
        process's CPU seconds, how many live hosts are out of sync (and
        the first ``names`` of them) and how many deployables there are."""
        out = self.out_of_sync()
        times = os.times()
        with self._lock:
            counts = dict(self.counts)
            delay_max = self.delay_max
        return {'counts': counts, 'cpu_s': times.user + times.system,
                'delay_max_s': round(delay_max, 3),
                'out_of_sync': len(out), 'out_of_sync_names': out[:names],
                'wanted': self.wanted()}


# -- several processes ------------------------------------------------------

#: What starts a line a simulator process answers with.
REPLY = '@@sim '


def count_messages(counts, lock):
    """Count what this process sends on the broker: each message, and a
    reply for each call (as ``tools/bench/scale`` counts a conductor's)."""
    from cyborg.common import rpc
    send = rpc.SigningTransport._send

    def counted(self, target, ctxt, message, wait_for_reply=None, *args,
                **kwargs):
        with lock:
            counts['messages'] += 2 if wait_for_reply else 1
            counts['calls' if wait_for_reply else 'casts'] += 1
        return send(self, target, ctxt, message, wait_for_reply, *args,
                    **kwargs)
    rpc.SigningTransport._send = counted


class _Child:
    """One simulator process and its command pipe."""

    def __init__(self, spec_file, log_file, env):
        self.log_file = log_file
        with open(log_file, 'w') as log:
            self.process = subprocess.Popen(
                [sys.executable, '-m', 'cyborg.tests.functional.simhosts',
                 spec_file], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, text=True, env=env)
        self._lock = threading.Lock()

    def _ended(self):
        with open(self.log_file) as f:
            tail = f.read()[-2000:]
        return RuntimeError('simulator process %d ended: %s' % (
            self.process.pid, tail))

    def _answer(self):
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise self._ended()
            if line.startswith(REPLY):
                return json.loads(line[len(REPLY):])

    def ready(self):
        with self._lock:
            return self._answer()

    def request(self, op, **kwargs):
        with self._lock:
            try:
                self.process.stdin.write(json.dumps(dict(kwargs, op=op))
                                         + '\n')
                self.process.stdin.flush()
            except OSError:
                raise self._ended() from None
            return self._answer()

    def stop(self, timeout=30):
        """Ask it to stop; killed if not gone within ``timeout`` seconds
        (its answer is not waited for: it comes once its hosts' tasks
        ended)."""
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({'op': 'stop'}) + '\n')
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()


class SimHostProcesses:
    """The hosts of :class:`SimHosts` played by ``processes`` processes,
    each a :class:`SimHosts` of a slice of them (the same variants as
    one process gives them, the storm's ``threads`` and the trickle of
    changes shared out), on the broker and topic prefix of ``conf``;
    what they count is gathered here. For thousands of hosts: one
    process's heartbeats, whose RPC sends cost it CPU under one GIL,
    fall behind. ``nice`` is added to the processes' niceness; with
    ``idle`` they run under Linux's SCHED_IDLE policy, which a task of
    any other policy preempts as soon as it wakes (at a niceness of 19, a
    waking daemon may still wait for the running simulator's slice)."""

    def __init__(self, conf, hostnames, key_dir, state_dir, processes=2,
                 heartbeat_interval=None, rescan_interval=None,
                 full_rescan_interval=600, change_interval=5.0, threads=16,
                 steady_threads=None, seed=1, env=None, nice=0,
                 idle=False):
        processes = max(1, min(processes, len(hostnames)))
        per = -(-len(hostnames) // processes)
        self._changing = True
        self.children = []
        self._owner = {}
        try:
            for index in range(processes):
                names = hostnames[index * per:(index + 1) * per]
                if not names:
                    break
                spec = {
                    'transport_url': conf.transport_url,
                    'rpc_topic_prefix': conf.rpc_topic_prefix,
                    'key_dir': key_dir, 'state_dir': state_dir,
                    'hostnames': names, 'first_index': index * per,
                    'heartbeat_interval': (heartbeat_interval
                                           or conf.agent.heartbeat_interval),
                    'rescan_interval': (rescan_interval
                                        or conf.agent.rescan_interval),
                    'full_rescan_interval': full_rescan_interval,
                    'change_interval': (change_interval or 0) * processes,
                    'threads': -(-threads // processes),
                    'steady_threads': (steady_threads
                                       and -(-steady_threads // processes)),
                    'seed': seed + index, 'nice': nice, 'idle': idle}
                spec_file = os.path.join(state_dir, 'sim-%d.json' % index)
                with open(spec_file, 'w') as f:
                    json.dump(spec, f)
                child = _Child(spec_file, os.path.join(
                    state_dir, 'sim-%d.log' % index), env)
                self.children.append(child)
                for name in names:
                    self._owner[name] = child
            for child in self.children:
                child.ready()
        except BaseException:
            self.stop()
            raise

    def _all(self, op, **kwargs):
        with concurrent.futures.ThreadPoolExecutor(
                len(self.children)) as pool:
            return list(pool.map(lambda c: c.request(op, **kwargs),
                                 self.children))

    @property
    def changing(self):
        return self._changing

    @changing.setter
    def changing(self, value):
        self._changing = bool(value)
        self._all('changing', value=self._changing)

    def boot(self):
        """As :meth:`SimHosts.boot`, every process at once."""
        start = time.monotonic()
        self._all('boot')
        return time.monotonic() - start

    def start(self):
        self._all('start')

    def kill(self, hostname):
        self._owner[hostname].request('kill', host=hostname)

    def reset_delay_max(self):
        self._all('reset_delay_max')

    def last_beat(self, hostname):
        return self._owner[hostname].request('last_beat', host=hostname)

    def state(self, names=0):
        """As :meth:`SimHosts.state`, summed over the processes, with the
        messages they sent (``messages``) and ``processes``."""
        states = self._all('state', names=names)
        total = {'counts': {}, 'messages': {}, 'cpu_s': 0.0,
                 'delay_max_s': max(one['delay_max_s'] for one in states),
                 'out_of_sync': 0, 'out_of_sync_names': [], 'wanted': 0,
                 'processes': len(states)}
        for one in states:
            for key in ('counts', 'messages'):
                for name, value in one[key].items():
                    total[key][name] = total[key].get(name, 0) + value
            for key in ('cpu_s', 'out_of_sync', 'wanted'):
                total[key] += one[key]
            total['out_of_sync_names'].extend(one['out_of_sync_names'])
        total['out_of_sync_names'] = sorted(total['out_of_sync_names'])[
            :names]
        return total

    @property
    def counts(self):
        return self.state()['counts']

    def out_of_sync(self):
        return self.state(names=len(self._owner))['out_of_sync_names']

    def wanted(self):
        return self.state()['wanted']

    def stop(self):
        with concurrent.futures.ThreadPoolExecutor(
                max(1, len(self.children))) as pool:
            list(pool.map(lambda child: child.stop(), self.children))


def serve(spec_file, infile=None, outfile=None):
    """A simulator process: the hosts of ``spec_file`` (written by
    :class:`SimHostProcesses`), commanded one JSON line at a time."""
    from cyborg.common import rpc
    from cyborg.common import service
    from cyborg import conf as cyborg_conf
    with open(spec_file) as f:
        spec = json.load(f)
    if spec.get('nice'):
        # The hosts stand for other machines: at a lower priority, they
        # take none of the CPU the daemons under test want.
        os.nice(spec['nice'])
    if spec.get('idle'):
        # Before any thread starts: they inherit the policy.
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    conf = cyborg_conf.CONF
    service.prepare_service(['simhosts'], conf, default_config_files=[])
    rpc.register_opts(conf)
    conf.set_override('transport_url', spec['transport_url'])
    conf.set_override('rpc_topic_prefix', spec['rpc_topic_prefix'])
    conf.set_override('key_dir', spec['key_dir'], group='security')
    import logging
    logging.getLogger().setLevel(logging.ERROR)
    messages = {'messages': 0, 'calls': 0, 'casts': 0}
    lock = threading.Lock()
    count_messages(messages, lock)
    # Plays compute hosts: a guest on the broker, as agents are.
    rpc.init(conf, keys.KeyStore(spec['key_dir']),
             identity=keys.API)
    sim = SimHosts(
        conf, spec['hostnames'], spec['key_dir'],
        state_dir=spec['state_dir'],
        heartbeat_interval=spec['heartbeat_interval'],
        rescan_interval=spec['rescan_interval'],
        full_rescan_interval=spec['full_rescan_interval'],
        change_interval=spec['change_interval'], threads=spec['threads'],
        steady_threads=spec['steady_threads'], seed=spec['seed'],
        first_index=spec['first_index'])
    infile = infile or sys.stdin
    outfile = outfile or sys.stdout

    def reply(value):
        outfile.write(REPLY + json.dumps(value) + '\n')
        outfile.flush()

    def state(names=0):
        answer = sim.state(names)
        with lock:
            answer['messages'] = dict(messages)
        return answer

    def changing(value):
        sim.changing = value
    handlers = {
        'boot': sim.boot, 'start': sim.start, 'changing': changing,
        'kill': lambda host: sim.kill(host),
        'last_beat': lambda host: sim.last_beat(host),
        'reset_delay_max': sim.reset_delay_max, 'state': state}
    reply('ready')
    try:
        for line in infile:
            command = json.loads(line)
            op = command.pop('op')
            if op == 'stop':
                break
            if op not in handlers:
                reply({'error': 'unknown op %r' % op})
                continue
            reply(handlers[op](**command))
    finally:
        sim.stop()
        rpc.cleanup()


if __name__ == '__main__':
    # Library output on stdout must not mix with the answers.
    answers = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)
    serve(sys.argv[1], sys.stdin, answers)
