# Shared start of the checks that need their own virtual environment (scripts/bfcl_check.sh,
# scripts/verl_check.sh): sourced, not run. Usage: `source scripts/side_venv.sh NAME DEFAULT_DIR`.
# Sets VENV (NAME_VENV overrides it), PYTHON, TORCH, TMPDIR, start; NAME_VENV_FRESH=1 rebuilds.
# When the venv is not installed yet it creates it with pip upgraded and the CPU torch first, and
# sets NEEDS_INSTALL=1: the caller installs its packages, then runs `side_venv_installed`.
# `side_venv_tests DIR [pytest args]` runs a test folder and prints the timings and the size; with
# `--setup-only` as the first argument it only says the venv is ready (the caller installed it).
set -euo pipefail

_name=$1
cd "$(dirname "${BASH_SOURCE[0]}")/.."
_override="${_name}_VENV"
_fresh="${_name}_VENV_FRESH"
VENV=${!_override:-$2}
PYTHON=${PYTHON:-python3}
TORCH=torch==2.13.0
export TMPDIR=${TMPDIR:-$PWD/.tmp}
export WANDB_MODE=offline OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$TMPDIR"
start=$(date +%s)

if [[ "${!_fresh:-0}" == 1 ]]; then rm -rf "$VENV"; fi
NEEDS_INSTALL=0
if [[ ! -f "$VENV/.installed" ]]; then
    NEEDS_INSTALL=1
    test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q "$TORCH"
fi

side_venv_installed() { touch "$VENV/.installed"; }

side_venv_tests() {
    local folder=$1 installed end label
    shift
    label=$(basename "$0" .sh)
    installed=$(date +%s)
    if [[ "${1:-}" == "--setup-only" ]]; then
        echo "$label: $VENV ready in $((installed - start)) s ($(du -sh "$VENV" | cut -f1))"
        return 0
    fi
    # -p no:cacheprovider keeps the run from writing .pytest_cache next to the default suite's.
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" "$folder" "$@"
    end=$(date +%s)
    echo "$label: install $((installed - start)) s, tests $((end - installed)) s, total $((end - start)) s"
    echo "$label: $(du -sh "$VENV" | cut -f1) in $VENV"
}
