#!/usr/bin/env bash
# GPU smoke check: a few GRPO steps (HF engine, bf16, CUDA) on a tiny Qwen3 with head_dim 128 and LoRA;
# prints peak GPU memory and seconds per step. Needs only torch, transformers, peft, lightning and
# torch-geometric in the active Python (no vLLM, no network); installs nothing.
#
# Usage: bash scripts/gpu_smoke.sh [--steps 6] [--batch 8] [--group 8]   (--device cpu: check it on a CPU)
set -euo pipefail
cd "$(dirname "$0")/.."
export TMPDIR="${TMPDIR:-$PWD/.tmp}" WANDB_MODE=offline
mkdir -p "$TMPDIR"
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
exec "$PYTHON" -m scripts.gpu_smoke "$@"
