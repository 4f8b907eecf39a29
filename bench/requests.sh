#!/usr/bin/env bash
# Request streams (`--stage-to-report --requests`), in one run on one
# machine: Llama-3-70B at tp=8 on H100s (chunked prefill), Poisson arrivals
# at 4 requests/s with prompts uniform in 128..2048 and outputs exponential
# with mean 256, for 1000, 10000 and 100000 requests: whole-process wall
# time and peak memory of the report, with the iterations it simulated.
#
#   bench/requests.sh [WORK_DIR]     (default: bench/out-requests)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
work="${1:-$root/bench/out-requests}"
rm -rf "$work" && mkdir -p "$work"

"$bin/stage-translate" --import-hf-config "$root/examples/hf/llama-3-70b.json" \
  --batch=32 --seq=2048 -o "$work/model.mlir"
"$bin/stage-opt" "$work/model.mlir" -o "$work/serve.mlir" \
  --stage-infer="tp=8 decode-tokens=128 chunked-prefill=512"
for n in 1000 10000 100000; do
  stream="poisson:rate=4,count=$n,prompt=uniform:128:2048,output=exponential:256,seed=1"
  /usr/bin/time -f "%e %M" -o "$work/$n.time" \
    "$bin/stage-translate" "$work/serve.mlir" --stage-to-report --device=h100 \
    --requests="$stream" --slo=ttft:1,tpot:50ms --format=json -o "$work/$n.json"
  read -r wall kb < "$work/$n.time"
  python3 - "$work/$n.json" "$n" "$wall" "$kb" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["requests"]
n, wall, kb = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
print("%7s requests: %6.2f s wall, %6.1f MiB peak, %8d iterations; "
      "TTFT p50/p99 %.1f/%.1f ms, TPOT p50/p99 %.2f/%.2f ms, %.0f tokens/s" % (
          n, wall, kb / 1024, r["iterations"],
          1e3 * r["ttft_seconds"]["p50"], 1e3 * r["ttft_seconds"]["p99"],
          1e3 * r["tpot_seconds"]["p50"], 1e3 * r["tpot_seconds"]["p99"],
          r["throughput_tokens_per_second"]))
PY
done
