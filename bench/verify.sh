#!/usr/bin/env bash
# The verifier at scale: whole-process wall time and peak memory of
# `stage-trace verify` on
#  (a) 16384 ranks of a Llama-3-70B job (dp=1024 tp=4 pp=4, 4 micro-batches;
#      72.8 M nodes, 5.8 GB), and
#  (b) 131072 ranks of a Llama-3.1-405B-shaped job with one layer per stage
#      (16 layers; dp=1024 tp=8 pp=16, 16 micro-batches, 1F1B; 125.6 M
#      nodes, 10.6 GB: the 126-layer model's set would be 74 GB).
#
#   bench/verify.sh [WORK_DIR]     (default: bench/out-verify; needs 17 GB)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
work="${1:-$root/bench/out-verify}"
rm -rf "$work" && mkdir -p "$work"

measure() { # NAME DIR
  /usr/bin/time -v "$bin/stage-trace" verify "$2" > "$work/$1.out" 2> "$work/$1.time"
  local wall rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/$1.time")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/$1.time")
  printf '%-44s %10s %8d MiB   %s\n' "$1" "$wall" $((rss / 1024)) \
    "$(cut -d: -f1 "$work/$1.out")"
}

"$bin/stage-translate" --import-hf-config "$root/examples/hf/llama-3-70b.json" \
  --batch=4096 --seq=4096 -o "$work/a.mlir"
"$bin/stage-opt" "$work/a.mlir" -o "$work/a-step.mlir" \
  --stage-train="dp=1024 tp=4 pp=4 micro-batches=4"
"$bin/stage-translate" "$work/a-step.mlir" --stage-to-chakra \
  --output-dir="$work/a" > /dev/null
python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
c["num_hidden_layers"] = 16
json.dump(c, open(sys.argv[2], "w"))' "$root/examples/hf/llama-3.1-405b.json" \
  "$work/b.json"
"$bin/stage-translate" --import-hf-config "$work/b.json" --batch=16384 \
  --seq=4096 -o "$work/b.mlir"
"$bin/stage-opt" "$work/b.mlir" -o "$work/b-step.mlir" \
  --stage-train="dp=1024 tp=8 pp=16 micro-batches=16 schedule=1f1b"
"$bin/stage-translate" "$work/b-step.mlir" --stage-to-chakra \
  --output-dir="$work/b" > /dev/null
printf '%-44s %10s %12s   %s\n' set wall "peak memory" result
measure "(a) Llama-3-70B, 16384 ranks" "$work/a"
measure "(b) 405B-shaped (16 layers), 131072 ranks" "$work/b"
rm -rf "$work/a" "$work/b"
