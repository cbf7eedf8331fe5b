"""Many simulated compute hosts in one process, speaking the real agent
protocol (:mod:`cyborg.sim.processes` shares them out among several
processes).

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

The hardware it fakes is that of the captures the tests read
(``cyborg/tests/data/captures``: data files, no test code).
"""

import concurrent.futures
import heapq
import itertools
import json
import os
import random
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

CAPTURES = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'tests', 'data', 'captures')

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


def fpga_card(hostname, slot, functions=1, bus=None, name=None,
              label='sim'):
    """A fake FPGA card of ``hostname`` in PCI slot ``slot`` (bus 0x80 and
    up unless ``bus`` says: clear of the captured trees' and the fake
    driver's addresses), its deployable (``name``, ``HOST_cardSLOT`` by
    default) with ``functions`` functions; ``label`` names the model and
    the board."""
    address = {'domain': '0000',
               'bus': '%02x' % (0x80 + slot if bus is None else bus),
               'device': '00', 'function': '0'}
    deployable = dd.DriverDeployable(
        name=name or '%s_card%d' % (hostname, slot),
        num_accelerators=functions, driver_name='FAKEDRIVER',
        attribute_list=[dd.DriverAttribute(key='rc', value='FPGA'),
                        dd.DriverAttribute(key='trait0',
                                           value='CUSTOM_FAKE_DEVICE')],
        attach_handle_list=[dd.DriverAttachHandle(
            attach_type='TEST_PCI', in_use=False,
            attach_info=json.dumps(dict(address, function=str(f)),
                                   sort_keys=True))
            for f in range(functions)])
    return dd.DriverDevice(
        vendor='0xABCD', model='%s card' % label, type='FPGA',
        std_board_info=json.dumps({'device_id': '0xabcd'}),
        vendor_board_info=label,
        controlpath_id=dd.DriverControlPathID(
            cpid_type='PCI', cpid_info=json.dumps(address, sort_keys=True)),
        deployable_list=[deployable], stub=False)


def bench_cards(hostname, count, functions=1):
    """The benchmarks' ``count`` cards of ``hostname``: buses 1 and up,
    deployables ``HOST_fpgaN``."""
    return [fpga_card(hostname, index, functions, bus=index + 1,
                      name='%s_fpga%d' % (hostname, index), label='bench')
            for index in range(count)]


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
        # Which host gains or loses a card next: no secret (S311).
        self.rng = random.Random(seed)  # noqa: S311
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
