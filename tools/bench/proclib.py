"""What the benchmarks read from ``/proc``: the CPU time, threads and
memory of a process and its descendants (a daemon is often a parent and
its workers), processes by name, and the machine's busy time. It imports
nothing of cyborg, so that ``upstream_storm``, which runs with upstream's
``cyborg`` package, uses it too."""

import os


def _stat(pid):
    """(parent pid, utime + stime in seconds) of ``pid``, from /proc."""
    with open('/proc/%s/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return int(fields[1]), ticks / os.sysconf('SC_CLK_TCK')


def _all_stats():
    stats = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                stats[int(entry)] = _stat(entry)
            except (OSError, ValueError, IndexError):
                pass  # gone meanwhile
    return stats


def process_tree(pid, stats=None):
    """``pid`` and its descendants (an oslo.service daemon is a parent
    and its workers)."""
    stats = _all_stats() if stats is None else stats
    children = {}
    for child, (parent, _cpu) in stats.items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        if current in stats:
            found.append(current)
        todo.extend(children.get(current, []))
    return found


def cpu_seconds(pid):
    """CPU time (user + system) of process ``pid`` itself."""
    return _stat(pid)[1]


def tree_cpu_seconds(pid):
    """CPU time (user + system) of process ``pid`` and its descendants."""
    stats = _all_stats()
    return sum(stats[p][1] for p in process_tree(pid, stats))


def tree_threads(pid):
    """How many threads process ``pid`` and its descendants run."""
    count = 0
    for one in process_tree(pid):
        try:
            count += len(os.listdir('/proc/%s/task' % one))
        except FileNotFoundError:
            pass
    return count


def _rollup(pid):
    """{field: kB} of /proc/<pid>/smaps_rollup (Rss, Pss, ...)."""
    values = {}
    with open('/proc/%s/smaps_rollup' % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == 'kB':
                values[parts[0].rstrip(':')] = int(parts[1])
    return values


def tree_memory(pid):
    """(RSS, PSS) in MiB of process ``pid`` and its descendants. RSS
    counts a page shared by two processes of the tree twice, PSS
    splits it between them."""
    rss = pss = 0
    for process in process_tree(pid):
        try:
            values = _rollup(process)
        except OSError:
            continue  # gone meanwhile
        rss += values.get('Rss', 0)
        pss += values.get('Pss', 0)
    return rss / 1024, pss / 1024


def pids_named(*names):
    """Pids of the running processes whose command is one of ``names``
    (a database server, a broker)."""
    pids = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/comm' % entry) as f:
                    if f.read().strip() in names:
                        pids.append(int(entry))
            except OSError:
                pass  # gone meanwhile
    return pids


def sched_seconds(pid):
    """(seconds run on a core, seconds waited for one while runnable,
    times put on a core) of process ``pid``'s threads, summed: the
    scheduler's ``schedstat``, in nanoseconds' precision where
    ``/proc/PID/stat`` counts ticks of 10 ms. Threads that ended are not
    counted."""
    run = wait = slices = 0
    task = '/proc/%s/task' % pid
    for tid in os.listdir(task):
        try:
            with open('%s/%s/schedstat' % (task, tid)) as f:
                fields = f.read().split()
        except OSError:
            continue  # ended meanwhile
        run += int(fields[0])
        wait += int(fields[1])
        slices += int(fields[2])
    return run / 1e9, wait / 1e9, slices


def sched_of(pids):
    """:func:`sched_seconds` of each of ``pids``; (0.0, 0.0, 0) for one
    that is gone."""
    seconds = []
    for pid in pids:
        try:
            seconds.append(sched_seconds(pid))
        except (OSError, ValueError, IndexError):
            seconds.append((0.0, 0.0, 0))
    return seconds


def trees_cpu_seconds(pids):
    """``tree_cpu_seconds`` of several processes, summed."""
    stats = _all_stats()
    return sum(stats[p][1] for pid in pids for p in process_tree(pid, stats))


def _machine_seconds():
    """The whole machine's CPU seconds by kind (all cores), from the
    first line of /proc/stat: user, nice, system, idle, iowait, irq,
    softirq, steal."""
    with open('/proc/stat') as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    fields += [0] * (8 - len(fields))
    return [n / os.sysconf('SC_CLK_TCK') for n in fields]


def machine_busy_seconds():
    """CPU seconds the whole machine spent busy (all cores), from
    /proc/stat."""
    seconds = _machine_seconds()
    return sum(seconds) - seconds[3] - seconds[4]  # idle, iowait


def machine_steal_seconds():
    """CPU seconds the hypervisor gave this virtual machine's cores to
    others while they had work (``steal`` of /proc/stat, all cores):
    counted in :func:`machine_busy_seconds`, but no process of this
    machine ran then."""
    return _machine_seconds()[7]


def runnable():
    """Threads runnable on the machine now (``procs_running`` of
    /proc/stat; the reader is one of them)."""
    with open('/proc/stat') as f:
        for line in f:
            if line.startswith('procs_running '):
                return int(line.split()[1])
    return None
