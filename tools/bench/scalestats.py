"""The boot cycles ``tools/bench/scale`` runs in its steady state
(:func:`boot_cycles`), and the figures it prints of it: the
boot cycles' (by step, the slowest, by how busy the machine was, what
each daemon ran and waited meanwhile) and the daemons' costs, from two
snapshots of their metrics and CPU (:mod:`scrape`)."""

import os
import time

import bootcycle
import proclib
import scrape

#: The daemons whose metrics a snapshot has, the conductors first.
CONDUCTORS = ('ctl-1', 'ctl-2')


def boot_cycles(run, stop, latencies, errors, steps):
    """One Nova boot cycle every ``--boot-interval`` seconds until
    ``stop`` is set; each step's seconds go to ``steps`` (by name, as
    ``latencies``: (when it began, seconds))."""
    client = bootcycle.Client('http://127.0.0.1:%d' % run.api_port)
    targets = run.boot_targets()
    # One cycle not counted: the first one's connections and caches are
    # cold (seen up to 2 s), which no later cycle is.
    try:
        bootcycle.boot_cycle(client, targets[0], run.nova)
    except Exception as e:
        errors.append('warm-up: %s' % e)
    pids = [c.process.pid for c in run.conductors] + [run.api.pid]
    # The database server and the broker too, when found.
    pids += proclib.pids_named('mariadbd', 'mysqld')[:1]
    pids += proclib.pids_named('beam.smp')[:1]
    index = 0
    while not stop.wait(run.args.boot_interval):
        index += 1
        began = time.monotonic()
        busy = proclib.machine_busy_seconds()
        daemons = proclib.sched_of(pids)
        waiting = proclib.runnable()
        one = {name: [] for name in bootcycle.STEPS}
        try:
            elapsed, _ = bootcycle.timed(bootcycle.boot_cycle, client,
                                         targets[index % len(targets)],
                                         run.nova, one)
        except Exception as e:
            errors.append(str(e))
            continue
        # How busy the machine was meanwhile (cores), and how many
        # threads were runnable as it began.
        busy = (proclib.machine_busy_seconds() - busy) / max(elapsed, 1e-3)
        # Per daemon, ms run on a core, ms waited for one and times put
        # on one (each a wake-up or a preemption) meanwhile.
        daemons = [(round(1000 * (b[0] - a[0]), 1),
                    round(1000 * (b[1] - a[1]), 1), b[2] - a[2])
                   for a, b in zip(daemons, proclib.sched_of(pids),
                                   strict=True)]
        # The steps first: a reader takes as many as there are cycles.
        for name, seconds in one.items():
            steps.setdefault(name, []).extend(seconds)
        latencies.append((began, elapsed, busy, waiting, daemons))


def boot_steps(cycles, steps, slowest=5):
    """Per step of the boot cycle, p50/p99/max in ms; the slowest cycles
    with their steps (ms) and when they began (s into the steady state
    is ``at_s``, from ``cycles``' first)."""
    def ms(value):
        return round(1000 * value, 1)
    by_step = {name: {'p50': ms(bootcycle.percentile(values, 0.5)),
                      'p99': ms(bootcycle.percentile(values, 0.99)),
                      'max': ms(max(values))}
               for name, values in steps.items() if values}
    first = cycles[0][0] if cycles else 0
    order = sorted(range(len(cycles)), key=lambda i: -cycles[i][1])
    slow = [dict({'at_s': round(cycles[i][0] - first, 1),
                  'ms': ms(cycles[i][1]),
                  'machine_busy_cores': round(cycles[i][2], 2),
                  'runnable': cycles[i][3],
                  # ms run on a core, ms waited for one and times put
                  # on one meanwhile by ctl-1, ctl-2, the API, the
                  # database server and the broker (the last two when
                  # found).
                  'daemon_sched': cycles[i][4]},
                 **{name: ms(values[i]) for name, values in steps.items()
                    if len(values) == len(cycles)})
            for i in order[:slowest]]
    return by_step, slow


def boot_daemons(cycles):
    """Per daemon (as ``daemon_sched``), the mean ms run on a core and
    waited for one, and times put on one, during a cycle: over all
    cycles, and over the slowest tenth of them (where the p99 comes
    from)."""
    def means(group):
        if not group:
            return None
        width = len(group[0][4])
        return [[round(sum(c[4][d][k] for c in group) / len(group), 1)
                 for k in range(len(group[0][4][d]))]
                for d in range(width)]
    order = sorted(cycles, key=lambda c: -c[1])
    slowest = order[:max(1, len(order) // 10)]
    return {'all': means(cycles), 'slowest_tenth': means(slowest),
            'slowest_tenth_ms': (round(1000 * sum(c[1] for c in slowest)
                                       / len(slowest), 1)
                                 if slowest else None)}


def per_second(counts, seconds):
    """``{key: count}`` as ``{key: count a second}``, the most first."""
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    return {key: round(n / seconds, 2) for key, n in ranked}


def daemon_numbers(before, after, seconds):
    """The daemons' costs between two snapshots, from their metrics:
    the conductors' database statements a second (by kind, and the
    writes), the API's, binds and reports by outcome (the conductors
    count them), and the messages on the broker a second: what the
    daemons sent (the conductors, the API) and the hosts (a reply for
    each call)."""
    conductors = scrape.phase(after['metrics'], before['metrics'],
                              CONDUCTORS)
    api = scrape.phase(after['metrics'], before['metrics'], ('api',))
    kinds = conductors['statements_by_kind']
    writes = sum(kinds.get(kind, 0) for kind in ('insert', 'update',
                                                   'delete'))
    hosts = after['messages']['messages'] - before['messages']['messages']
    messages = hosts + conductors['rpc_messages'] + api['rpc_messages']
    return {
        'db_statements_per_s': round(conductors['statements'] / seconds, 1),
        'db_writes_per_s': round(writes / seconds, 1),
        'db_statements_per_s_by_kind': per_second(kinds, seconds),
        'api_db_statements_per_s': round(api['statements'] / seconds, 1),
        'rabbit_messages_per_s': round(messages / seconds, 1),
        'binds_steady_by_outcome': conductors['binds_by_outcome'],
        'reports_steady_by_outcome': conductors['reports_by_outcome'],
    }


def boot_by_machine(cycles):
    """Boot p50/p99 (ms) of the cycles during which the machine's cores
    were all busy (``saturated``: 90 % of them or more) and of the
    others."""
    full = 0.9 * (os.cpu_count() or 1)
    groups = {'saturated': [c[1] for c in cycles if c[2] >= full],
              'not_saturated': [c[1] for c in cycles if c[2] < full]}
    return {name: {'n': len(values),
                   'p50': round(1000 * bootcycle.percentile(values, 0.5), 1),
                   'p99': round(1000 * bootcycle.percentile(values, 0.99), 1)}
            for name, values in groups.items() if values}


def steady_numbers(run, hosts, before, after, cycles, boot_errors, steps):
    # The cycles of the steady state (the boots go on meanwhile).
    cycles = list(cycles)
    steps = {name: values[:len(cycles)] for name, values in steps.items()}
    boots = [cycle[1] for cycle in cycles]
    seconds = after['time'] - before['time']
    minutes = seconds / 60
    cpu = sum(after['cpu']) - sum(before['cpu'])
    by_step, slowest = boot_steps(cycles, steps)
    return {
        'steady_s': round(seconds, 1),
        'conductor_cpu_s_per_min': round(cpu / minutes, 2),
        'conductor_cpu_s_per_host_min': round(cpu / minutes / hosts, 5),
        'conductor_cores': round(cpu / seconds, 3),
        'conductor_cpu_s_by_conductor': [
            round(a - b, 1) for a, b in zip(after['cpu'], before['cpu'],
                                            strict=True)],
        **daemon_numbers(before, after, seconds),
        'placement_requests_steady': (after['placement']['requests']
                                      - before['placement']['requests']),
        'placement_requests_steady_by_kind': {
            kind: count - before['placement']['kinds'].get(kind, 0)
            for kind, count in sorted(after['placement']['kinds'].items())
            if count - before['placement']['kinds'].get(kind, 0)},
        'boot_cycles': len(boots),
        'boot_errors': len(boot_errors),
        'boot_p50_ms': (round(1000 * bootcycle.percentile(boots, 0.5), 1)
                        if boots else None),
        'boot_p99_ms': (round(1000 * bootcycle.percentile(boots, 0.99), 1)
                        if boots else None),
        'boot_steps_ms': by_step,
        'boot_slowest': slowest,
        'boot_by_machine': boot_by_machine(cycles),
        'boot_daemons': boot_daemons(cycles),
        'sim_processes': run.sim_processes,
        'sim_nice': run.args.sim_nice if run.sim_processes else 0,
        'sim_idle': bool(run.args.sim_idle and run.sim_processes),
        'sim_cpu_s_per_min': round((after['sim_cpu'] - before['sim_cpu'])
                                   / minutes, 1),
        'sim_cores': round((after['sim_cpu'] - before['sim_cpu'])
                           / seconds, 3),
        'harness_cpu_s_per_min': round(
            (after['harness_cpu'] - before['harness_cpu']) / minutes, 1),
        'sim_delay_max_s': after['sim_delay_max_s'],
        'sim_steady_counts': {
            key: value - before['sim_counts'].get(key, 0)
            for key, value in sorted(after['sim_counts'].items())},
        'machine_steal_cores': round((after['steal'] - before['steal'])
                                     / seconds, 3),
        'machine_busy_cores': round((after['machine'] - before['machine'])
                                    / seconds, 2),
    }
