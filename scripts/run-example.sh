#!/usr/bin/env bash
# The main job on a plan file (default: examples/plans/llama3-8b-8gpu.plan):
# import the model, build the training step of the plan, write one Chakra
# trace per rank, verify the set, and print the report.
#
#   scripts/run-example.sh [PLAN] [OUTPUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
plan="${1:-$root/examples/plans/llama3-8b-8gpu.plan}"
name="$(basename "$plan" .plan)"
out="${2:-$root/out/$name}"

config="" batch=8 seq=0 train="" import=""
# shellcheck disable=SC1090
source "$plan"
[[ "$config" = /* ]] || config="$root/$config"

mkdir -p "$out"
echo "== import $config (batch $batch, seq $seq)"
# shellcheck disable=SC2086
"$bin/stage-translate" --import-hf-config "$config" --batch="$batch" --seq="$seq" \
  $import -o "$out/model.mlir"
echo "== stage-train: $train"
"$bin/stage-opt" "$out/model.mlir" --stage-train="$train" -o "$out/step.mlir"
echo "== Chakra traces"
"$bin/stage-translate" "$out/step.mlir" --stage-to-chakra --output-dir="$out/traces"
echo "== verify"
"$bin/stage-trace" verify "$out/traces"
echo "== report"
"$bin/stage-translate" "$out/step.mlir" --stage-to-report | tee "$out/report.md"
