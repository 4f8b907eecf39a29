#!/usr/bin/env bash
# The main job on a plan file (default: examples/plans/llama3-8b-8gpu.plan):
# import the model, build the training step (train=) or the serving run
# (infer=) of the plan, write one Chakra trace per rank, verify the set, and
# print the report.
#
#   scripts/run-example.sh [PLAN] [OUTPUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
plan="${1:-$root/examples/plans/llama3-8b-8gpu.plan}"
name="$(basename "$plan" .plan)"
out="${2:-$root/out/$name}"

# A plan file is KEY=VALUE lines (config, batch, seq, train or infer, import) and
# comments; it is read, not sourced, so that a misspelled key is an error
# rather than a shell variable nobody reads.
config="" batch=8 seq=0 train="" infer="" import=""
[[ -r "$plan" ]] || { echo "run-example: cannot read the plan $plan" >&2; exit 1; }
lineno=0
while IFS= read -r line || [[ -n "$line" ]]; do
  lineno=$((lineno + 1))
  [[ "$line" =~ ^[[:space:]]*(#.*)?$ ]] && continue
  if [[ ! "$line" =~ ^([a-z]+)=(.*)$ ]]; then
    echo "$plan:$lineno: error: expected KEY=VALUE, got: $line" >&2
    exit 1
  fi
  key="${BASH_REMATCH[1]}" value="${BASH_REMATCH[2]}"
  if [[ "$value" =~ ^\"(.*)\"$ ]]; then value="${BASH_REMATCH[1]}"; fi
  case "$key" in
    config) config="$value" ;;
    batch) batch="$value" ;;
    seq) seq="$value" ;;
    train) train="$value" ;;
    infer) infer="$value" ;;
    import) import="$value" ;;
    *)
      echo "$plan:$lineno: error: unknown key '$key'; the keys are config, batch, seq, train, infer, import" >&2
      exit 1 ;;
  esac
done < "$plan"
[[ -n "$config" ]] || { echo "$plan: error: no config= line names the model" >&2; exit 1; }
[[ "$config" = /* ]] || config="$root/$config"
if [[ -n "$train" && -n "$infer" ]]; then
  echo "$plan: error: a plan trains (train=) or serves (infer=), not both" >&2
  exit 1
fi

mkdir -p "$out"
echo "== import $config (batch $batch, seq $seq)"
# shellcheck disable=SC2086
"$bin/stage-translate" --import-hf-config "$config" --batch="$batch" --seq="$seq" \
  $import -o "$out/model.mlir"
if [[ -n "$infer" ]]; then
  echo "== stage-infer: $infer"
  "$bin/stage-opt" "$out/model.mlir" --stage-infer="$infer" -o "$out/step.mlir"
else
  echo "== stage-train: $train"
  "$bin/stage-opt" "$out/model.mlir" --stage-train="$train" -o "$out/step.mlir"
fi
echo "== Chakra traces"
"$bin/stage-translate" "$out/step.mlir" --stage-to-chakra --output-dir="$out/traces"
echo "== verify"
"$bin/stage-trace" verify "$out/traces"
echo "== report"
"$bin/stage-translate" "$out/step.mlir" --stage-to-report | tee "$out/report.md"
