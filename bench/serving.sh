#!/usr/bin/env bash
# Serving benchmarks, in one run on one machine:
#
#  (a) speed: Llama-3-70B served at tp=8 dp=128 (1024 ranks, 32 requests of
#      2048 tokens per replica, 128 decoded) against the same model trained
#      at tp=8 dp=128 (one micro-batch of 4 sequences of 2048 per replica):
#      whole-process wall time, peak memory and trace nodes per second of
#      `--stage-to-chakra`, written to disk;
#  (c) disaggregated: the same requests with the prefill on tp=8 dp=64 and
#      the decode on tp=4 dp=128 (1024 ranks, the KV caches handed over),
#      whose ranks are encoded one by one rather than from a class
#      template: its nodes per second against (a)'s serving;
#  (b) prediction: the llama3-70b-serve-8gpu example simulated by ASTRA-sim
#      (../shared/astra-sim, when present) against the report's roofline
#      time to first token + N x time per output token.
#
#   bench/serving.sh [WORK_DIR]     (default: bench/out-serving)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
work="${1:-$root/bench/out-serving}"
rm -rf "$work" && mkdir -p "$work"

timed() { # NAME CMD...: GNU time's wall seconds and peak KB into $work/NAME.time
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/$name.time" "$@" > "$work/$name.log" 2>&1
}
nodes() { "$bin/stage-trace" stats "$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(sum(sum(t["nodes"].values()) for t in s["traces"]))'; }

"$bin/stage-translate" --import-hf-config "$root/examples/hf/llama-3-70b.json" \
  --batch=4096 --seq=2048 -o "$work/serve-model.mlir"
"$bin/stage-opt" "$work/serve-model.mlir" -o "$work/serve.mlir" \
  --stage-infer="tp=8 dp=128 decode-tokens=128"
"$bin/stage-translate" --import-hf-config "$root/examples/hf/llama-3-70b.json" \
  --batch=512 --seq=2048 -o "$work/train-model.mlir"
"$bin/stage-opt" "$work/train-model.mlir" -o "$work/train.mlir" \
  --stage-train="tp=8 dp=128"

timed serve "$bin/stage-translate" "$work/serve.mlir" --stage-to-chakra --output-dir="$work/serve-traces"
timed train "$bin/stage-translate" "$work/train.mlir" --stage-to-chakra --output-dir="$work/train-traces"
read -r sw sm < "$work/serve.time"
read -r tw tm < "$work/train.time"
sn=$(nodes "$work/serve-traces")
tn=$(nodes "$work/train-traces")
echo "(a) 1024 ranks, written:"
printf '    serving  %10d nodes  %6.2f s  %7.1f MB peak  %6.2f M nodes/s\n' "$sn" "$sw" "$(echo "$sm/1024" | bc -l)" "$(echo "$sn/$sw/1000000" | bc -l)"
printf '    training %10d nodes  %6.2f s  %7.1f MB peak  %6.2f M nodes/s\n' "$tn" "$tw" "$(echo "$tm/1024" | bc -l)" "$(echo "$tn/$tw/1000000" | bc -l)"
printf '    nodes/s serving / training: %.2f\n' "$(echo "($sn/$sw)/($tn/$tw)" | bc -l)"
rm -rf "$work/train-traces"

"$bin/stage-opt" "$work/serve-model.mlir" -o "$work/disagg.mlir" \
  --stage-infer="decode-tokens=128 prefill={tp=8 dp=64} decode={tp=4 dp=128} gpus=1024"
timed disagg "$bin/stage-translate" "$work/disagg.mlir" --stage-to-chakra --output-dir="$work/disagg-traces"
read -r dw dm < "$work/disagg.time"
dn=$(nodes "$work/disagg-traces")
echo "(c) 1024 ranks, disaggregated (prefill tp=8 dp=64, decode tp=4 dp=128), written:"
printf '    disaggregated %10d nodes  %6.2f s  %7.1f MB peak  %6.2f M nodes/s\n' "$dn" "$dw" "$(echo "$dm/1024" | bc -l)" "$(echo "$dn/$dw/1000000" | bc -l)"
printf '    nodes/s disaggregated / serving: %.2f\n' "$(echo "($dn/$dw)/($sn/$sw)" | bc -l)"
rm -rf "$work/serve-traces" "$work/disagg-traces"

sim="$root/../shared/astra-sim/simulate.sh"
if [[ -x "$sim" ]]; then
  "$root/scripts/run-example.sh" "$root/examples/plans/llama3-70b-serve-8gpu.plan" "$work/ex" > /dev/null
  "$bin/stage-translate" "$work/ex/step.mlir" --stage-to-chakra --device=h100 --output-dir="$work/ex/timed"
  simulated=$("$sim" "$work/ex/timed" | sed -n 's/^max: \([0-9]*\) ns/\1/p')
  predicted=$("$bin/stage-translate" "$work/ex/step.mlir" --stage-to-report --format=json | python3 -c '
import json, sys
t = json.load(sys.stdin)["job"]["job_time"]
print(t["total"]["value"])')
  echo "(b) llama3-70b-serve-8gpu: ASTRA-sim $(echo "$simulated/1000000000" | bc -l | cut -c1-6) s," \
       "report $predicted s, ratio $(echo "$simulated/1000000000/$predicted" | bc -l | cut -c1-5)"
else
  echo "(b) skipped: no ASTRA-sim at $sim"
fi
