#!/usr/bin/env bash
# Check our BFCL-v3 checkers against the official code (PyPI bfcl-eval==2026.3.23), in its own environment.
#
# bfcl-eval pins numpy==1.26.4, filelock==3.20.0, networkx==3.3 and a dozen API SDKs, so it cannot
# share .venv. This script builds .venv-bfcl (gitignored) once and runs tests/bfcl/ in it; rerunning
# reuses the environment (BFCL_VENV_FRESH=1 rebuilds it).
#
# What is installed, and why:
#   - torch==2.13.0 first and on every pip line, so pip keeps the CPU build (our scheduling core,
#     imported by envsched_lightning.envs, needs torch, numpy and torch-geometric);
#   - bfcl-eval with --no-deps: its declared pins are for running the whole leaderboard, not the
#     modules the checks import (ast_checker, the Qwen FC handler's decoder, the multi-turn checker
#     and its backends), which run with the numpy and filelock that torch-geometric brings;
#   - what those modules import at load time, found by importing them until nothing was missing:
#     `ast_checker` imports `constants.model_config`, which imports every model handler, so every
#     API SDK a handler imports at module level is needed (anthropic, openai, cohere, mistralai,
#     google-genai, boto3, writer-sdk, qwen-agent + soundfile), plus overrides, tenacity, requests,
#     filelock, datamodel-code-generator and the tree-sitter Java/JavaScript parsers (pinned as
#     bfcl-eval pins them: the parser code is written against tree_sitter 0.21); pandas for
#     `eval_checker.eval_runner`, whose per-entry functions the single-turn check calls as they are;
#   - this project with --no-deps: its other pins (transformers, lightning, vllm) are not needed by
#     the environments and would only slow the install;
#   - pytest, and pytest-xdist (the agreement checks are pure Python: `-n 2` runs them on both cores);
#
# Usage: bash scripts/bfcl_check.sh [pytest args]   (from anywhere; prints wall time and environment size)
#        e.g. bash scripts/bfcl_check.sh -k single_turn -s    (-s shows the per-category agreement table)
source "$(dirname "$0")/side_venv.sh" BFCL .venv-bfcl

if [[ "$NEEDS_INSTALL" == 1 ]]; then
    "$VENV/bin/pip" install -q --no-deps "bfcl-eval==2026.3.23"
    "$VENV/bin/pip" install -q "$TORCH" "torch-geometric>=2.6" "numpy>=1.26" "pytest>=8" "pytest-xdist>=3.5" \
        overrides tenacity requests filelock pandas "datamodel-code-generator==0.25.7" \
        anthropic openai "cohere==5.18.0" "mistralai==1.7.0" google-genai boto3 writer-sdk qwen-agent soundfile \
        "tree_sitter==0.21.3" "tree-sitter-java==0.21.0" "tree-sitter-javascript==0.21.4" \
        2>&1 | grep -v -E "^(ERROR: pip's dependency resolver|bfcl-eval .* requires)" || true
    "$VENV/bin/pip" install -q --no-deps -e .
    # Fail here, not in a test, when an import is still missing.
    "$VENV/bin/python" -c "
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
from bfcl_eval.eval_checker.eval_runner import _evaluate_single_ast_entry
from bfcl_eval.model_handler.local_inference.qwen_fc import QwenFCHandler
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
import envsched_lightning.envs.bfcl.single_turn"
    side_venv_installed
fi

side_venv_tests tests/bfcl "$@"
