"""The hosts of :class:`cyborg.sim.hosts.SimHosts` played by several
processes: for thousands of hosts, whose RPC sends cost one process CPU
under one GIL. :class:`SimHostProcesses` starts them (``python -m
cyborg.sim.processes SPEC``), commands them one JSON line at a time on
their stdin and gathers what they count; :func:`serve` is a process's
side. :func:`sent_messages` says what a process sent on the broker, from its
own metrics (as the daemons' are read from theirs).
"""

import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time

from cyborg.common import keys
from cyborg.sim import hosts as sim_hosts


#: What starts a line a simulator process answers with.
REPLY = '@@sim '


def sent_messages():
    """What this process sent on the broker, as its own metrics count it
    (``cyborg_rpc_client_messages_total``, counted whether or not they
    are served): ``calls``, ``casts``, and ``messages``, a reply counted
    for each call."""
    from cyborg.common import metrics
    counts = {'messages': 0, 'calls': 0, 'casts': 0}
    for family in metrics.RPC_CLIENT.collect():
        for sample in family.samples:
            if not sample.name.endswith('_total'):
                continue
            kind = sample.labels.get('kind')
            if kind in ('call', 'cast'):
                counts[kind + 's'] += int(sample.value)
    counts['messages'] = 2 * counts['calls'] + counts['casts']
    return counts


class _Child:
    """One simulator process and its command pipe."""

    def __init__(self, spec_file, log_file, env):
        self.log_file = log_file
        with open(log_file, 'w') as log:
            self.process = subprocess.Popen(
                [sys.executable, '-m', 'cyborg.sim.processes',
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
    """The hosts of :class:`~cyborg.sim.hosts.SimHosts` played by
    ``processes`` processes, each a ``SimHosts`` of a slice of them (the
    same variants as
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
        """As :meth:`~cyborg.sim.hosts.SimHosts.boot`, every process at
        once."""
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
        """As :meth:`~cyborg.sim.hosts.SimHosts.state`, summed over the
        processes, with the
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
    # Plays compute hosts: a guest on the broker, as agents are.
    rpc.init(conf, keys.KeyStore(spec['key_dir']),
             identity=keys.API)
    sim = sim_hosts.SimHosts(
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
        answer['messages'] = sent_messages()
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
