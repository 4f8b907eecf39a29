#!/usr/bin/env bash
# Pipeline schedules and communication overlap, simulated by ASTRA-sim
# (../shared/astra-sim, analytical, congestion-unaware, its H100 system
# config), in one run on one machine:
#
#  (a) schedules: a Llama-3-8B pipeline (32 layers, sequence 4096, 16
#      sequences in 16 micro-batches, tp=2 pp=4: 8 GPUs) and a Mixtral-8x7B
#      pipeline (32 layers, 8 experts of which 2 per token, sequence 2048,
#      32 sequences in 16 micro-batches, ep=2 pp=4: 8 GPUs), each under
#      gpipe, 1f1b, interleaved (2 chunks per rank), zb-h1, zb-v,
#      dualpipe-v and dualpipe (two copies of the stages: twice the
#      parameters per rank): the simulated iteration, its ratio to 1F1B's,
#      and the report's bubble and iteration (roofline) for the same plan;
#  (b) overlap: the same Llama pipeline under zb-h1, a Llama-3-8B at tp=2
#      dp=4 ZeRO-1 and at dp=8 ZeRO-3 (8 GPUs, 8 layers), and a 1B-class
#      Llama (width 2048, 8 layers, sequence 2048) at dp=8 ZeRO-3, each with
#      overlap=none and overlap=all: the simulated iterations and their
#      ratio.
#
#   bench/schedules.sh [WORK_DIR]     (default: bench/out-schedules)
#
# Needs ../shared/astra-sim; takes about 6 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
work="${1:-$root/bench/out-schedules}"
sim="${ASTRA_SIM_DIR:-$root/../shared/astra-sim}/simulate.sh"
[[ -x "$sim" ]] || { echo "bench: no ASTRA-sim at $sim" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"

# CONFIG OUT KEY=VALUE...: a config with fields changed (the overlap plans
# use fewer layers, to keep simulation short).
reshape() { python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
for kv in sys.argv[3:]:
    k, v = kv.split("=")
    c[k] = int(v)
json.dump(c, open(sys.argv[2], "w"))' "$@"; }

# NAME MODEL PLAN: train, write timed traces, simulate; prints the simulated
# and the report's iteration (seconds) and the report's bubble.
run() {
  local name=$1 model=$2 plan=$3
  "$bin/stage-opt" "$model" --stage-train="$plan" -o "$work/$name.mlir"
  "$bin/stage-translate" "$work/$name.mlir" --stage-to-chakra --device=h100 \
    --output-dir="$work/$name" > /dev/null
  "$bin/stage-translate" "$work/$name.mlir" --stage-to-report --device=h100 \
    --format=json -o "$work/$name.json"
  local ns
  ns=$("$sim" "$work/$name" | sed -n 's/^max: \([0-9]*\) ns/\1/p')
  rm -rf "${work:?}/$name"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(int(sys.argv[2]) * 1e-9, r["stages"][0]["time"]["iteration"]["value"],
      r["pipeline"]["bubble"] if "pipeline" in r else 0)' "$work/$name.json" "$ns"
}

"$bin/stage-translate" --import-hf-config "$root/examples/hf/llama-3-8b.json" \
  --batch=16 --seq=4096 -o "$work/llama.mlir"
"$bin/stage-translate" --import-hf-config "$root/examples/hf/mixtral-8x7b.json" \
  --batch=32 --seq=2048 -o "$work/mixtral.mlir"

echo "(a) schedules, 8 GPUs, 16 micro-batches (simulated; report: roofline)"
printf '    %-22s %-11s %10s %8s %10s %8s\n' model schedule simulated "/1f1b" report bubble
for model in llama:"tp=2 pp=4" mixtral:"ep=2 pp=4"; do
  name=${model%%:*} degrees=${model#*:}
  base=""
  for schedule in 1f1b gpipe interleaved zb-h1 zb-v dualpipe-v dualpipe; do
    read -r s r b < <(run "$name-$schedule" "$work/$name.mlir" \
      "$degrees micro-batches=16 schedule=$schedule")
    base=${base:-$s}
    printf '    %-22s %-11s %8.2f ms %8.3f %8.2f ms %7.1f%%\n' "$name ($degrees)" \
      "$schedule" "$(echo "$s*1000" | bc -l)" "$(echo "$s/$base" | bc -l)" \
      "$(echo "$r*1000" | bc -l)" "$(echo "$b*100" | bc -l)"
  done
done

reshape "$root/examples/hf/llama-3-8b.json" "$work/llama8.json" num_hidden_layers=8
"$bin/stage-translate" --import-hf-config "$work/llama8.json" \
  --batch=16 --seq=4096 -o "$work/llama8.mlir"
reshape "$root/examples/hf/llama-3-8b.json" "$work/small.json" num_hidden_layers=8 \
  hidden_size=2048 intermediate_size=5632 num_attention_heads=16 vocab_size=32000
"$bin/stage-translate" --import-hf-config "$work/small.json" \
  --batch=16 --seq=2048 -o "$work/small.mlir"
echo "(b) overlap, 8 GPUs (simulated)"
printf '    %-40s %10s %10s %8s\n' plan none all "all/none"
for case in "llama:tp=2 pp=4 micro-batches=16 schedule=zb-h1" \
            "llama8:tp=2 dp=4 zero=1 micro-batches=4" \
            "llama8:dp=8 zero=3 micro-batches=2" \
            "small:dp=8 zero=3 micro-batches=2"; do
  model=${case%%:*} plan=${case#*:}
  read -r off _ _ < <(run "$model-off" "$work/$model.mlir" "$plan overlap=none")
  read -r on _ _ < <(run "$model-on" "$work/$model.mlir" "$plan overlap=all")
  printf '    %-40s %7.2f ms %7.2f ms %8.3f\n' "$model: $plan" \
    "$(echo "$off*1000" | bc -l)" "$(echo "$on*1000" | bc -l)" \
    "$(echo "$on/$off" | bc -l)"
done
