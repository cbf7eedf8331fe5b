"""Where the upstream reference is: the directory that the reference
kit's ``ref-up.sh`` runs upstream OpenStack Cyborg from (its virtualenv,
pid files, logs and configuration; ``~/cyborg-ref`` unless ``$REF``
says otherwise).

Only the benchmarks' upstream modes need it. They take it from
``--ref-dir`` or ``$REF``, and where it is not there they say in one
line how to get it and exit with 2 (:func:`require`). The kit itself
is not part of this repository: ``doc/source/admin/benchmarks.rst``
says where it is and how to start it. Nothing else here, no test
included, depends on it.

Imports nothing of cyborg: ``upstream_storm``, which runs with
upstream's ``cyborg`` package, uses it too.
"""

import json
import os
import subprocess
import sys

#: The environment variable naming the directory (as ``ref-up.sh``
#: reads it).
ENV = 'REF'
DEFAULT = '~/cyborg-ref'
#: The Python of upstream's cyborg, in the directory.
PYTHON = os.path.join('venv-cyborg', 'bin', 'python')
EXIT_MISSING = 2


def default_dir():
    """``$REF``, else ``~/cyborg-ref``."""
    return os.path.expanduser(os.environ.get(ENV) or DEFAULT)


def add_option(parser):
    """``--ref-dir`` on ``parser`` (an argparse parser)."""
    parser.add_argument(
        '--ref-dir', default=default_dir(),
        help="the upstream reference's directory, where its ref-up.sh "
             "installed and started upstream cyborg (default: $%s, else "
             "%s)" % (ENV, DEFAULT))


def how_to_get(path):
    """One line: what is missing and how to get it."""
    return ('no upstream reference at %s: start one with the reference '
            "kit's ref-up.sh (doc/source/admin/benchmarks.rst shows how), "
            'then pass --ref-dir DIR or set %s=DIR' % (path, ENV))


def require(ref_dir, *parts):
    """``ref_dir`` joined with ``parts``, when it exists; else the one
    line of :func:`how_to_get` on stderr, and exit with 2."""
    path = os.path.join(os.path.expanduser(ref_dir), *parts)
    if not os.path.exists(path):
        print(how_to_get(path), file=sys.stderr, flush=True)
        raise SystemExit(EXIT_MISSING)
    return path


def python(ref_dir):
    """The Python of upstream's cyborg in ``ref_dir`` (see
    :func:`require`)."""
    return require(ref_dir, PYTHON)


def environ(ref_dir):
    """The environment of a process run with upstream's Python: this
    one's, less ``PYTHONPATH`` (upstream's cyborg package, not ours), with
    ``$REF`` naming ``ref_dir``."""
    env = {key: value for key, value in os.environ.items()
           if key != 'PYTHONPATH'}
    env[ENV] = ref_dir
    return env


# -- tools/bench/scale's upstream rounds ------------------------------------

def upstream_round(args, hosts):
    storm = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         'upstream_storm')
    command = [args.upstream_python, storm,
               '--hosts', str(hosts), '--devices', '4',
               '--threads', str(args.threads)]
    done = subprocess.run(command, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False,
                          env=environ(args.ref_dir),
                          cwd=args.ref_dir)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit('upstream_storm failed: %s' % (
            done.stdout + done.stderr)[-2000:]) from None


def run_upstream(args):
    """Upstream's rounds, doubling, until one takes longer than its
    agents' period. Returns (the host count where a round would take the
    whole period, from the last round: by its time and by its
    conductor's CPU seconds; points for the chart)."""
    points, by_time, by_cpu = [], None, None
    hosts = args.upstream_hosts
    while hosts <= args.upstream_max:
        result = upstream_round(args, hosts)
        seconds = result['consistent_s']
        cpu = result['cpu_s_by_part_first']['conductor']
        print('upstream: %d hosts x 4 devices: a round took %.1f s, its '
              'conductor %.1f CPU-s' % (hosts, seconds, cpu), flush=True)
        # Its conductor at that count: a round each period, and at most
        # the whole period busy.
        points.append((hosts, min(cpu, args.upstream_period)
                       * 60 / args.upstream_period))
        by_time = int(hosts * args.upstream_period / seconds)
        by_cpu = int(hosts * args.upstream_period / max(cpu, 0.01))
        if seconds > args.upstream_period:
            break
        hosts *= 2
    if by_cpu and by_cpu > points[-1][0]:
        # Where its conductor would be busy the whole minute.
        points.append((by_cpu, 60.0))
    return by_time, by_cpu, points
