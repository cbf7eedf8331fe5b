# shellcheck shell=bash
# Shared by tools/run-tests and tools/aio (sourced, not run).
#
# cyborg_venv TOP makes TOP/.venv ready: it creates the virtualenv with
# "python3 -m venv" if there is none, and installs requirements.txt,
# test-requirements.txt and cyborg itself (editable) into it. The
# installation is skipped when a stamp file in the virtualenv holds the
# hash of requirements.txt, test-requirements.txt and setup.cfg as they
# are now. Delete .venv to start from scratch.

cyborg_venv() {
    local top=$1
    local venv="$top/.venv"
    local stamp="$venv/.cyborg-installed"
    local want have

    if [ ! -x "$venv/bin/python" ]; then
        echo "==> creating virtualenv $venv"
        if ! python3 -m venv "$venv"; then
            echo "python3 -m venv failed; on Debian/Ubuntu install the" \
                "python3-venv package" >&2
            return 1
        fi
        rm -f "$stamp"
    fi

    want=$(python3 -c 'import hashlib, sys
print(hashlib.sha256(b"".join(
    open(n, "rb").read() + b"\0" for n in sys.argv[1:])).hexdigest())' \
        "$top/requirements.txt" "$top/test-requirements.txt" \
        "$top/setup.cfg")
    have=""
    if [ -f "$stamp" ]; then
        have=$(cat "$stamp")
    fi
    if [ "$want" = "$have" ]; then
        echo "==> virtualenv $venv is up to date"
        return 0
    fi

    echo "==> upgrading pip"
    "$venv/bin/python" -m pip install -qq --upgrade pip
    echo "==> installing requirements and cyborg into $venv" \
        "(takes a few minutes the first time)"
    "$venv/bin/python" -m pip install -qq \
        -r "$top/requirements.txt" -r "$top/test-requirements.txt" \
        -e "$top"
    echo "$want" > "$stamp"
}
