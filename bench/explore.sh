#!/usr/bin/env bash
# The plan search (docs/Explore.md), in one run on one machine:
#
#  (a) its time model against ASTRA-sim: a dozen plans on 8 to 32 GPUs
#      (bench/explore_vs_astra_sim.py), each ratio and the rank correlation;
#  (b) its speed: whole-process time and peak memory (/usr/bin/time -v) of
#      stage-explore on Llama-3-8B on 64 GPUs, Llama-3-70B serving on 64
#      GPUs, GPT-3 175B on 1024 GPUs and Llama-3.1-405B on 16384 GPUs, with
#      the plans per second the tool prints (per CPU second of a core); the
#      405B search again with one job, a core alone (two jobs on this
#      machine's two cores slow each other); and the constrained GPT-3
#      search with and without --exhaustive (the time the lower bound of
#      the iteration saves, and that the best plans are the same).
#
#   bench/explore.sh [WORK_DIR]     (default: bench/out-explore)
#
# Needs ../shared/astra-sim for (a).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
work="${1:-$root/bench/out-explore}"
sim="${ASTRA_SIM_DIR:-$root/../shared/astra-sim}/simulate.sh"
rm -rf "$work" && mkdir -p "$work"

if [[ -x "$sim" ]]; then
  echo "(a) the time model against ASTRA-sim"
  python3 "$root/bench/explore_vs_astra_sim.py" "$bin" "$sim" "$work/sim"
else
  echo "(a) skipped: no ASTRA-sim at $sim"
fi

echo "(b) search speed (whole searches; each cut at 30 minutes)"
# The model NAME of examples/hf/CONFIG.json at BATCH x SEQ.
import() {
  "$bin/stage-translate" --import-hf-config "$root/examples/hf/$2.json" \
    --batch="$3" --seq="$4" --pad-vocab-to=128 -o "$work/$1.mlir"
}
search() {
  local name=$1; import "$@"; shift 4
  local rc=0
  timeout 1800 /usr/bin/time -v "$bin/stage-explore" "$work/$name.mlir" \
    --quiet "$@" -o "$work/$name.md" 2> "$work/$name.time" || rc=$?
  if [[ $rc -ne 0 ]]; then
    printf '    %-34s did not finish (exit %s)\n' "$name $*" "$rc"
    return
  fi
  printf '    %-34s %s; %s s, %s MiB\n' "$name $*" \
    "$(sed -n 's/^.*Compiled \(.*\): CPU seconds per core\. .*/\1/p' "$work/$name.md")" \
    "$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/$name.time")" \
    "$(( $(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/$name.time") / 1024 ))"
}
# The lower bound's skipping against evaluating every plan, in one run: the
# two wall times, their ratio, and whether the best ten agree.
skipping() {
  local name=$1; import "$@"; shift 4
  local t0 t1 t2
  t0=$(date +%s.%N)
  "$bin/stage-explore" "$work/$name.mlir" --quiet --format=json "$@" \
    -o "$work/$name.skip.json"
  t1=$(date +%s.%N)
  "$bin/stage-explore" "$work/$name.mlir" --quiet --format=json --exhaustive \
    "$@" -o "$work/$name.all.json"
  t2=$(date +%s.%N)
  python3 - "$name $*" "$t0" "$t1" "$t2" "$work/$name.skip.json" \
    "$work/$name.all.json" <<'PY'
import json, sys
name, t0, t1, t2 = sys.argv[1], *map(float, sys.argv[2:5])
same = json.load(open(sys.argv[5])) == json.load(open(sys.argv[6]))
print(f"    {name:34} skipping {t1 - t0:.1f} s, exhaustive {t2 - t1:.1f} s: "
      f"{(t2 - t1) / (t1 - t0):.1f}x; best ten {'identical' if same else 'DIFFER'}")
PY
}
skipping gpt3-175b-1024gpu-zero01 gpt3-175b 1536 2048 --gpus=1024 \
  --device-memory=80GB --constraints="cp=1 zero<=1"
search llama3-8b-64gpu llama-3-8b 512 4096 --gpus=64
search llama3-70b-serve-64gpu llama-3-70b 256 2048 --gpus=64 --mode=infer --max-tpot=50
search gpt3-175b-1024gpu gpt3-175b 1536 2048 --gpus=1024 --device-memory=80GB
search llama3.1-405b-16384gpu llama-3.1-405b 2048 8192 --gpus=16384
search llama3.1-405b-16384gpu llama-3.1-405b 2048 8192 --gpus=16384 --jobs=1
