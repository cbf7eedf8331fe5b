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

import os
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
