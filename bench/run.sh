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
#   bench/run.sh [WORK_DIR]     (default: bench/out; needs ~3 GB free)
#
# Whole-process wall time, CPU time and peak memory come from GNU time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${STAGE_BUILD_DIR:-$root/build}/bin"
work="${1:-$root/bench/out}"
mkdir -p "$work"
[[ -x /usr/bin/time ]] || { echo "bench: needs GNU time (apt-get install time)" >&2; exit 1; }

measure() { # NAME CMD...: runs CMD, records "NAME wall user sys maxrss_kb"
  local name=$1; shift
  /usr/bin/time -f "$name %e %U %S %M" -o "$work/$name.time" "$@" > "$work/$name.out"
  cat "$work/$name.out"
}
mbps() { echo "$1 / $(field "$2" wall) / 1000000" | bc -l | xargs printf "%.0f"; }
ratio() { echo "$(field "$1" wall) / $(field "$2" wall)" | bc -l | xargs printf "%.2f"; }
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
# Into the page cache, then until the data is on disk, each alternating
# with dd writing the same bytes to the same directory, three rounds: the
# machine is shared, so the table takes each one's median round.
rm -rf "$work/a-traces"; sync
measure a-emit "$bin/stage-translate" "$work/a-step.mlir" --stage-to-chakra \
  --output-dir="$work/a-traces"
a_bytes=$(du -sb "$work/a-traces" | cut -f1)
measure a-verify "$bin/stage-trace" verify "$work/a-traces"
mb=$(( (a_bytes + 1048575) / 1048576 ))
echo "== three rounds of emit and dd, into the page cache and to disk"
for round in 1 2 3; do
  rm -rf "$work/a-traces"; sync
  measure "a-emit-$round" "$bin/stage-translate" "$work/a-step.mlir" \
    --stage-to-chakra --output-dir="$work/a-traces"
  rm -rf "$work/a-traces"; sync
  measure "a-emit-sync-$round" bash -c "'$bin/stage-translate' '$work/a-step.mlir' \
    --stage-to-chakra --output-dir='$work/a-traces' && sync -f '$work/a-traces'"
  rm -rf "$work/a-traces"; sync
  /usr/bin/time -f "dd-$round %e %U %S %M" -o "$work/dd-$round.time" \
    dd if=/dev/zero of="$work/dd.bin" bs=1M count="$mb" status=none
  rm -f "$work/dd.bin"; sync
  /usr/bin/time -f "dd-sync-$round %e %U %S %M" -o "$work/dd-sync-$round.time" \
    dd if=/dev/zero of="$work/dd.bin" bs=1M count="$mb" conv=fdatasync status=none
  rm -f "$work/dd.bin"; sync
done
rm -rf "$work/a-traces"
# The round of median wall time of NAME-1..3, copied to NAME.time.
median() {
  local best
  best=$(for r in 1 2 3; do echo "$(field "$1-$r" wall) $r"; done | sort -n | sed -n 2p | cut -d' ' -f2)
  cp "$work/$1-$best.time" "$work/$1.time"
}
median a-emit-sync; median dd; median dd-sync
echo "== (b) Llama-3.1-405B, 131072 ranks"
measure b-import "$bin/stage-translate" --import-hf-config "$root/examples/hf/llama-3.1-405b.json" \
  --batch=16384 --seq=4096 -o "$work/b.mlir"
measure b-train "$bin/stage-opt" "$work/b.mlir" -o "$work/b-step.mlir" \
  --stage-train="dp=1024 tp=8 pp=16 micro-batches=16 schedule=1f1b"
measure b-encode "$bin/stage-translate" "$work/b-step.mlir" --stage-to-chakra --encode-only
b_bytes=$(sed -n 's/.*ranks: \([0-9]*\) bytes.*/\1/p' "$work/b-encode.out")
rm -rf "$work/b-slice"
measure b-slice "$bin/stage-translate" "$work/b-step.mlir" --stage-to-chakra \
  --output-dir="$work/b-slice" --ranks=0:4096
rm -rf "$work/b-slice"

a_wall=$(echo "$(field a-import wall) + $(field a-train wall) + $(field a-emit wall)" | bc -l)
cat <<REPORT

| measurement | value |
|---|---|
| (a) import + stage-train + emit, wall | ${a_wall} s |
| (a) emit alone: wall, CPU, peak memory | $(field a-emit wall) s, $(field a-emit cpu) s, $(( $(field a-emit rss) / 1024 )) MiB |
| (a) bytes written (4096 traces + groups) | ${a_bytes} |
| (a) to disk: emit + sync, wall; throughput | $(field a-emit-sync wall) s; $(mbps "$a_bytes" a-emit-sync) MB/s |
| dd conv=fdatasync, same bytes and directory | $(field dd-sync wall) s; $(mbps "$a_bytes" dd-sync) MB/s |
| (a) to disk: our throughput / dd's | $(ratio dd-sync a-emit-sync) |
| (a) to the page cache: emit, wall; throughput | $(field a-emit wall) s; $(mbps "$a_bytes" a-emit) MB/s |
| dd to the page cache, same bytes and directory | $(field dd wall) s; $(mbps "$a_bytes" dd) MB/s |
| (a) to the page cache: our throughput / dd's | $(ratio dd a-emit) |
| (a) stage-trace verify: wall, peak memory | $(field a-verify wall) s, $(( $(field a-verify rss) / 1024 )) MiB |
| (b) stage-train of 405B, wall | $(field b-train wall) s |
| (b) encode 131072 ranks: wall, CPU, peak memory | $(field b-encode wall) s, $(field b-encode cpu) s, $(( $(field b-encode rss) / 1024 )) MiB |
| (b) bytes encoded | ${b_bytes} |
| (b) encoding rate per core (bytes / CPU time) | $(echo "$b_bytes / $(field b-encode cpu) / 1000000" | bc -l | xargs printf "%.0f") MB/s |
| (b) write ranks 0:4096: wall, peak memory | $(field b-slice wall) s, $(( $(field b-slice rss) / 1024 )) MiB |
REPORT
