#!/usr/bin/env bash
# Check `envsched_lightning.adapters.verl` against a real verl 0.9.1 install, in its own environment.
#
# verl 0.9.1 pins transformers <5.11 while this project pins >=5.16.1, so the two cannot share
# .venv. This script builds .venv-verl (gitignored) once and runs tests/verl/ in it; rerunning reuses
# the environment (VERL_VENV_FRESH=1 rebuilds it).
#
# What is installed, and why (the verl lines are the recipe docs/adapters.md gives users):
#   - torch==2.13.0 first and on every pip line, so pip keeps the CPU build and never swaps in a
#     CUDA one while resolving verl;
#   - verl==0.9.1 with its own dependencies (ray, tensordict, transformers 5.10.x, ...), under
#     scripts/verl_constraints.txt (verl's own version bounds): the check uses verl's Hydra configs,
#     `TaskRunner`, `RLHFDataset`, `DataProto` and `RayPPOTrainer.fit` as a training run would;
#   - cachetools, fastapi, uvicorn: imported by verl.trainer.ppo.ray_trainer but not declared by
#     verl 0.9.1;
#   - torch-geometric, pytest: what the scheduling core and the check add, under the same constraints;
#   - this project with --no-deps: its other pins (transformers, lightning, vllm) are not needed by
#     the scheduling core or the adapter and would conflict with verl's.
# `pip check` then must report nothing but this project's own requirements (left out on purpose).
#
# Usage: bash scripts/verl_check.sh            (from anywhere; prints wall time and environment size)
source "$(dirname "$0")/side_venv.sh" VERL .venv-verl

if [[ "$NEEDS_INSTALL" == 1 ]]; then
    "$VENV/bin/pip" install -q -c scripts/verl_constraints.txt "verl==0.9.1" cachetools fastapi uvicorn \
        "torch-geometric>=2.6" "pytest>=8" "$TORCH"
    "$VENV/bin/pip" install -q --no-deps -e .
    side_venv_installed
fi
broken=$("$VENV/bin/pip" check 2>/dev/null | grep -v -e '^envsched-lightning ' -e '^No broken requirements' || true)
if [[ -n "$broken" ]]; then echo "verl_check: broken requirements in $VENV:"; echo "$broken"; exit 1; fi

side_venv_tests tests/verl "$@"
