#!/usr/bin/env bash
# planner verify over Llama-3.1-8B, Qwen2.5-7B, Mistral-7B-v0.1, gemma-2-9b and Qwen3-30B-A3B
# x batch {1, 16, 64} x context {2k, 32k} on one GPU, predicted by a fresh 'planner calibrate'
# profile; prints one table (predicted, measured, error, achieved bandwidth) and the two target lines.
# Sized to finish inside 8 minutes on an H200 (a time budget stops new runs at 450 s).
#
#   bench/gpu_verify.sh                      # the GPU grid
#   bench/gpu_verify.sh --device cpu --models ./tiny-config-dir Qwen/Qwen2.5-0.5B --batches 1 2 --contexts 16 64 --steps 2
#
# Arguments are passed to bench/gpu_verify.py (see --help). PYTHON selects the interpreter.
# The calibrated profile is written to $PLANNER_CONFIG_DIR/hardware (a temporary folder unless set).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
if [[ -z "${PLANNER_CONFIG_DIR:-}" ]]; then
  PLANNER_CONFIG_DIR="$(mktemp -d)"
  export PLANNER_CONFIG_DIR
  trap 'rm -rf "$PLANNER_CONFIG_DIR"' EXIT
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"  # bundled configs; the GPU machine has no network
"$PY" bench/gpu_verify.py "$@"
