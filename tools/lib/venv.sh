# shellcheck shell=bash
# Shared by tools/run-tests and tools/aio (sourced, not run).
#
# cyborg_venv TOP [test] makes TOP/.venv ready: it creates the virtualenv
# with "python3 -m venv" if there is none, installs what the service needs
# to run (requirements.txt and cyborg itself, editable) and, with "test",
# what the tests need too (test-requirements.txt). tools/aio asks for the
# first, tools/run-tests for both.
#
# Each part is skipped when a stamp file in the virtualenv holds the hash
# of the files it was installed from, as they are now: $run_stamp for the
# service's part (requirements.txt and setup.cfg), $stamp for all of it
# (requirements.txt, test-requirements.txt and setup.cfg; the stamp
# earlier versions of this file wrote, so a virtualenv they made, or
# share, stays valid). So a virtualenv made by tools/aio gets only the
# test requirements from tools/run-tests, and one made by tools/run-tests
# needs nothing more for tools/aio. pip's progress is shown, less the
# lines about what is installed already. Delete .venv to start from
# scratch.
#
# Everything is installed with an OpenStack release's upper-constraints,
# as devstack and kolla source builds install a service ("pip install -c"):
# by default the newest one kept in tools/lib/constraints/ (master of
# August 2026, the nearest to 2026.2). CYBORG_CONSTRAINTS names another
# file (tools/lib/constraints/upper-constraints-2026.1.txt for the release
# before) or "none" for the newest releases PyPI has. The file is part of
# the stamps' hash, so changing it reinstalls.
#
# The test part installs cyborg again at the end: python-cyborgclient's
# legacy shell is a console script named "cyborg" too.

# The sha256 of the files named, one after another.
cyborg_hash() {
    python3 -c 'import hashlib, sys
print(hashlib.sha256(b"".join(
    open(n, "rb").read() + b"\0" for n in sys.argv[1:])).hexdigest())' "$@"
}

# pip install ARGS in VENV, showing what it does but what it skips.
cyborg_pip() {
    local venv=$1
    shift
    "$venv/bin/python" -m pip install --progress-bar off "$@" \
        | sed -u '/^Requirement already satisfied/d'
}

# The constraints file cyborg_venv installs with, or nothing for "none".
cyborg_constraints() {
    local top=$1
    local file=${CYBORG_CONSTRAINTS:-$top/tools/lib/constraints/upper-constraints-master-2026-08.txt}
    if [ "$file" = none ]; then
        return 0
    fi
    if [ ! -f "$file" ]; then
        echo "CYBORG_CONSTRAINTS names $file, which is not a file" >&2
        return 1
    fi
    (cd "$(dirname "$file")" && echo "$PWD/$(basename "$file")")
}

cyborg_venv() {
    local top=$1
    local part=${2:-run}
    local constraints
    local -a with=()
    local venv="$top/.venv"
    local stamp="$venv/.cyborg-installed"
    local run_stamp="$venv/.cyborg-run-installed"
    local want want_run

    if [ ! -x "$venv/bin/python" ]; then
        echo "==> creating virtualenv $venv"
        if ! python3 -m venv "$venv"; then
            echo "python3 -m venv failed; on Debian/Ubuntu install the" \
                "python3-venv package" >&2
            return 1
        fi
        rm -f "$stamp" "$run_stamp"
    fi

    constraints=$(cyborg_constraints "$top") || return 1
    if [ -n "$constraints" ]; then
        with=(-c "$constraints")
        echo "==> installing with the constraints of $constraints"
    fi
    want=$(cyborg_hash "$top/requirements.txt" \
        "$top/test-requirements.txt" "$top/setup.cfg" ${constraints:+"$constraints"})
    if [ "$want" = "$(cat "$stamp" 2>/dev/null)" ]; then
        echo "==> virtualenv $venv is up to date"
        return 0
    fi
    want_run=$(cyborg_hash "$top/requirements.txt" "$top/setup.cfg" \
        ${constraints:+"$constraints"})
    if [ "$want_run" != "$(cat "$run_stamp" 2>/dev/null)" ]; then
        echo "==> upgrading pip"
        "$venv/bin/python" -m pip install -q --upgrade pip
        echo "==> installing what cyborg needs to run (requirements.txt)" \
            "and cyborg into $venv; a few minutes the first time"
        cyborg_pip "$venv" ${with[@]+"${with[@]}"} \
            -r "$top/requirements.txt" -e "$top"
        echo "$want_run" > "$run_stamp"
    fi
    if [ "$part" != test ]; then
        echo "==> virtualenv $venv has what cyborg needs to run"
        return 0
    fi
    echo "==> installing what the tests need (test-requirements.txt)" \
        "into $venv"
    cyborg_pip "$venv" ${with[@]+"${with[@]}"} \
        -r "$top/requirements.txt" -r "$top/test-requirements.txt"
    # python-cyborgclient (a test requirement) has a console script named
    # "cyborg" too, its legacy shell, which replaces cyborg's when it is
    # installed after cyborg: cyborg is installed again, last.
    echo "==> installing cyborg again, so that bin/cyborg is cyborg's"
    cyborg_pip "$venv" ${with[@]+"${with[@]}"} --no-deps -e "$top"
    echo "$want" > "$stamp"
    echo "==> virtualenv $venv is up to date"
}
