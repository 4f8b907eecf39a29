#!/usr/bin/env bash
# Trace-generation benchmarks of issue 7, in one run on one machine:
#
#  (a) a Llama-70B-shaped training job (80 layers, width 8192, FFN 28672,
#      64 heads / 8 kv heads, sequence 1024, 64 sequences per data-parallel
#      replica in 4 micro-batches) at dp=256 tp=4 pp=4 = 4096 ranks, written;
#  (b) Llama-3.1-405B at tp=8 pp=16 dp=1024 = 131072 ranks, 1F1B with 16
#      micro-batches: every rank encoded without writing, then the ranks
#      0:4096 written;
#  and dd writing as many bytes as (a) to the same directory, for the ratio
#  (three alternating rounds, medians).
#
#   bench/run.sh [WORK_DIR]     (default: bench/out; needs 8 GiB free)
#
# Whole-process wall time, CPU time and peak memory come from GNU time.
#
# Two effects of the machine, not of the writer, are kept out of the
# comparison with dd. Every measured write goes to new files and nothing
# is deleted before the end: ext4 without a journal skips inodes deleted in
# the last minute when it allocates new ones, one by one, so creating 4096
# files right after deleting 4096 costs seconds that dd, creating one file,
# never pays. And a VM whose balloon reports freed memory to the host pays
# for the first touch of that memory again; each writer therefore starts
# after the memory freed before it has been reported (`settle`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
work="${1:-$root/bench/out}"
mkdir -p "$work"
avail_kb=$(df --output=avail -k "$work" | tail -1)
(( avail_kb > 8 * 1024 * 1024 )) || { echo "bench: needs 8 GiB free in $work" >&2; exit 1; }
# An earlier run's traces, or their removal less than a minute ago, would
# slow this run's file creation (deleted inodes, above): wait it out.
if compgen -G "$work/a-traces-*" > /dev/null || [[ -e "$work/b-slice" ]]; then
  rm -rf "$work"/a-traces-* "$work/b-slice"; touch "$work/removed"
fi
if [[ -e "$work/removed" ]]; then
  wait_s=$(( 61 - ($(date +%s) - $(stat -c %Y "$work/removed")) ))
  if (( wait_s > 0 )); then
    echo "bench: waiting ${wait_s} s after an earlier run's removal of its traces"
    sleep "$wait_s"
  fi
fi
[[ -x /usr/bin/time ]] || { echo "bench: needs GNU time (apt-get install time)" >&2; exit 1; }

measure() { # NAME CMD...: runs CMD, records "NAME wall user sys maxrss_kb"
  local name=$1; shift
  /usr/bin/time -f "$name %e %U %S %M" -o "$work/$name.time" "$@" > "$work/$name.out"
  cat "$work/$name.out"
}
mbps() { echo "$1 / $2 / 1000000" | bc -l | xargs printf "%.0f"; }  # BYTES SECONDS
ratio() { echo "$1 / $2" | bc -l | xargs printf "%.2f"; }
field() { awk -v k="$2" '{ if (k == "wall") print $2; else if (k == "cpu") print $3 + $4; else if (k == "rss") print $5 }' "$work/$1.time"; }

echo "== (a) Llama-70B-shaped, 4096 ranks"
cat > "$work/llama-70b-shaped.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "hidden_size": 8192,
 "intermediate_size": 28672, "num_attention_heads": 64,
 "num_key_value_heads": 8, "num_hidden_layers": 80, "vocab_size": 128256,
 "max_position_embeddings": 8192}
JSON
measure a-import "$bin/stage-translate" --import-hf-config "$work/llama-70b-shaped.json" \
  --batch=16384 --seq=1024 -o "$work/a.mlir"
measure a-train "$bin/stage-opt" "$work/a.mlir" -o "$work/a-step.mlir" \
  --stage-train="dp=256 tp=4 pp=4 micro-batches=4 schedule=1f1b"
echo "== three rounds of emit and dd, each into the page cache and then to disk"
# Each round writes a new trace set (the sets are removed at the end: see
# the note on deleted inodes above) and then as many bytes with dd, each
# timed until its data is in the page cache and then until `sync -f` has
# put it on disk. Before each, `settle` lets the memory freed by the last
# writer go back to the host, so dd and stage-translate start alike.
settle() { sync; sleep 5; }
for round in 1 2 3; do
  settle
  measure "a-emit-$round" "$bin/stage-translate" "$work/a-step.mlir" \
    --stage-to-chakra --output-dir="$work/a-traces-$round"
  measure "a-sync-$round" sync -f "$work"
  [[ $round == 1 ]] && mb=$(( ($(du -sb "$work/a-traces-1" | cut -f1) + 1048575) / 1048576 ))
  settle
  measure "dd-$round" dd if=/dev/zero of="$work/dd.bin" bs=1M count="$mb" status=none
  measure "dd-sync-$round" sync -f "$work"
  rm -f "$work/dd.bin"
done
a_bytes=$(du -sb "$work/a-traces-1" | cut -f1)
measure a-verify "$bin/stage-trace" verify "$work/a-traces-1"
# NAME.time: the round of median wall time of NAME-1..3. NAME-disk.wall:
# the median over the rounds of NAME's wall time plus its sync's.
median() {
  local best
  best=$(for r in 1 2 3; do echo "$(field "$1-$r" wall) $r"; done | sort -n | sed -n 2p | cut -d' ' -f2)
  cp "$work/$1-$best.time" "$work/$1.time"
  for r in 1 2 3; do echo "$(field "$1-$r" wall) + $(field "$2-$r" wall)" | bc -l; done |
    sort -n | sed -n 2p > "$work/$1-disk.wall"
}
median a-emit a-sync; median dd dd-sync
echo "== (b) Llama-3.1-405B, 131072 ranks"
measure b-import "$bin/stage-translate" --import-hf-config "$root/examples/hf/llama-3.1-405b.json" \
  --batch=16384 --seq=4096 -o "$work/b.mlir"
measure b-train "$bin/stage-opt" "$work/b.mlir" -o "$work/b-step.mlir" \
  --stage-train="dp=1024 tp=8 pp=16 micro-batches=16 schedule=1f1b"
measure b-encode "$bin/stage-translate" "$work/b-step.mlir" --stage-to-chakra --encode-only
b_bytes=$(sed -n 's/.*ranks: \([0-9]*\) bytes.*/\1/p' "$work/b-encode.out")
measure b-slice "$bin/stage-translate" "$work/b-step.mlir" --stage-to-chakra \
  --output-dir="$work/b-slice" --ranks=0:4096
rm -rf "$work"/a-traces-* "$work/b-slice"; touch "$work/removed"

a_wall=$(echo "$(field a-import wall) + $(field a-train wall) + $(field a-emit wall)" | bc -l | xargs printf "%.2f")
cat <<REPORT

| measurement | value |
|---|---|
| (a) import + stage-train + emit, wall | ${a_wall} s |
| (a) emit alone: wall, CPU, peak memory | $(field a-emit wall) s, $(field a-emit cpu) s, $(( $(field a-emit rss) / 1024 )) MiB |
| (a) bytes written (4096 traces + groups) | ${a_bytes} |
| (a) into the page cache: emit, wall; throughput | $(field a-emit wall) s; $(mbps "$a_bytes" "$(field a-emit wall)") MB/s |
| dd into the page cache, same bytes and directory | $(field dd wall) s; $(mbps "$a_bytes" "$(field dd wall)") MB/s |
| (a) into the page cache: our throughput / dd's | $(ratio "$(field dd wall)" "$(field a-emit wall)") |
| (a) to disk: emit + sync, wall; throughput | $(cat "$work/a-emit-disk.wall") s; $(mbps "$a_bytes" "$(cat "$work/a-emit-disk.wall")") MB/s |
| dd + sync, same bytes and directory | $(cat "$work/dd-disk.wall") s; $(mbps "$a_bytes" "$(cat "$work/dd-disk.wall")") MB/s |
| (a) to disk: our throughput / dd's | $(ratio "$(cat "$work/dd-disk.wall")" "$(cat "$work/a-emit-disk.wall")") |
| (a) stage-trace verify: wall, peak memory | $(field a-verify wall) s, $(( $(field a-verify rss) / 1024 )) MiB |
| (b) stage-train of 405B, wall | $(field b-train wall) s |
| (b) encode 131072 ranks: wall, CPU, peak memory | $(field b-encode wall) s, $(field b-encode cpu) s, $(( $(field b-encode rss) / 1024 )) MiB |
| (b) bytes encoded | ${b_bytes} |
| (b) encoding rate per core (bytes / CPU time) | $(echo "$b_bytes / $(field b-encode cpu) / 1000000" | bc -l | xargs printf "%.0f") MB/s |
| (b) write ranks 0:4096: wall, peak memory | $(field b-slice wall) s, $(( $(field b-slice rss) / 1024 )) MiB |
REPORT
