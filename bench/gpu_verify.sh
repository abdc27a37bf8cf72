#!/usr/bin/env bash
# planner verify over Llama-3.1-8B, Qwen2.5-7B, Mistral-7B-v0.1, gemma-2-9b and Qwen3-30B-A3B
# x batch {1, 16, 64} x context {2k, 32k} on one GPU, predicted by a fresh 'planner calibrate'
# profile, then tensor-parallel rows (verify --tp 1, 2, 4, 8 of Llama-3.1-8B where the GPUs exist) and a
# logits check against transformers (a random save_pretrained checkpoint, fp32 and bf16); prints one
# table (tp, predicted, measured, error, achieved bandwidth) and the target lines.
# Sized to finish inside 8 minutes on an H200 (a time budget stops new grid runs at 360 s, TP rows at 420 s).
#
#   bench/gpu_verify.sh                      # the GPU grid
#   bench/gpu_verify.sh --device cpu --models ./tiny-config-dir --batches 1 2 --contexts 16 64 --steps 2 --tp 1 2 --tp-model ./tiny-config-dir --logits --logits-model ./tiny-config-dir
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
