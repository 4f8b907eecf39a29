#!/usr/bin/env bash
# Builds stage's libFuzzer targets with clang 22 (AddressSanitizer and
# UndefinedBehaviorSanitizer, coverage instrumentation) in build-fuzz/, seeds
# each target's corpus from the test inputs and examples, and runs every
# target for SECONDS (default 60). Fails if any target finds a crash, a
# hang or a sanitizer report; the reproducer is under
# build-fuzz/findings/TARGET/ (docs/Testing.md). The random seed is fixed
# (STAGE_FUZZ_SEED, default 1; 0 picks one), so that a run on the same
# corpus on the same machine is repeatable. An input running longer than
# STAGE_FUZZ_TIMEOUT seconds (default 10, wall clock: raise it on a busy
# machine) is a hang.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Targets: fuzz-hf-config (the HF config importer), fuzz-sym-expr (the
# symbolic-expression parser), fuzz-stage-ir (the stage dialect's parsers
# and op verifiers), fuzz-trace-set (the Chakra trace reader, workload.json
# and the trace verifier).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz-hf-config fuzz-sym-expr fuzz-stage-ir fuzz-trace-set)
build="${STAGE_FUZZ_BUILD_DIR:-$root/build-fuzz}"

# The packages and the Release build (its tools write the trace seeds).
"$root/scripts/setup.sh"
missing=()
for p in clang-22 libclang-rt-22-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "fuzz: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

flags="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined"
flags+=" -fno-sanitize=vptr -fno-sanitize-recover=all"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=/usr/lib/llvm-22/bin/clang \
    -DCMAKE_CXX_COMPILER=/usr/lib/llvm-22/bin/clang++ \
    -DCMAKE_CXX_FLAGS_RELEASE="$flags -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELEASE="$flags -DNDEBUG" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DSTAGE_ENABLE_FUZZERS=ON
fi
ninja -C "$build" -j "${STAGE_JOBS:-$(nproc)}" "${targets[@]}"

# Seeds: the inputs the tests and examples already use.
bin="$root/build/bin"
corpus="$build/corpus"
seed() { mkdir -p "$corpus/$1"; cp "${@:2}" "$corpus/$1/" 2>/dev/null || true; }
seed fuzz-hf-config "$root"/examples/hf/*.json \
  $(find "$root/test" -name '*.json' -path '*HF*') \
  "$root"/test/Transforms/stage-shard/Inputs/*.json \
  "$root"/test/Transforms/stage-serve/Inputs/*.json
mkdir -p "$corpus/fuzz-sym-expr"
i=0
for e in "B*S*D" "2*B*S*D/tp" "(H + 2*KV)*Dh" "S^2" "B*S/(cp*dp)" "-3/4*x + y*y" \
  "D*F/tp + 3*D" "((a))" "L*(4*D*D + 3*D*F)/pp" "E/ep*Fe*D"; do
  printf '%s' "$e" > "$corpus/fuzz-sym-expr/seed$((i++))"
done
mkdir -p "$corpus/fuzz-stage-ir"
grep -rl --include='*.mlir' 'stage\.' "$root/test" | while read -r f; do
  cp "$f" "$corpus/fuzz-stage-ir/$(echo "${f#$root/}" | tr / _)"
done
mkdir -p "$corpus/fuzz-trace-set"
sets="$build/seed-sets"
rm -rf "$sets" && mkdir -p "$sets"
# Two layers keep the rank files small (about 7 KB): fast inputs.
sed 's/"num_hidden_layers": 8/"num_hidden_layers": 2/' \
  "$root/test/Transforms/stage-pipeline/Inputs/llama-8layers.json" > "$sets/llama-2layers.json"
"$bin/stage-translate" --import-hf-config "$sets/llama-2layers.json" \
  --batch=4 --seq=32 -o "$sets/model.mlir"
for plan in "dp=2" "tp=2" "pp=2 micro-batches=2" "dp=2 zero=3"; do
  name=$(echo "$plan" | tr ' =' '__')
  "$bin/stage-opt" "$sets/model.mlir" --stage-train="$plan" -o "$sets/$name.mlir"
  "$bin/stage-translate" "$sets/$name.mlir" --stage-to-chakra \
    --output-dir="$sets/$name" > /dev/null
  python3 "$root/fuzz/pack_trace_set.py" "$sets/$name" "$corpus/fuzz-trace-set/$name"
done

# The uninstrumented libMLIR needs these (scripts/check.sh says why).
export ASAN_OPTIONS="allow_user_poisoning=0:detect_container_overflow=0:detect_leaks=0:handle_abort=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TMPDIR="${TMPDIR:-/tmp}"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$build/findings/$t" "$corpus/$t"
  log="$build/findings/$t.log"
  rc=0
  max_len=65536
  [[ $t == fuzz-trace-set ]] && max_len=1048576
  "$build/fuzz/$t" "$corpus/$t" -max_total_time="$seconds" -timeout="${STAGE_FUZZ_TIMEOUT:-10}" \
    -rss_limit_mb=4096 -max_len=$max_len -print_final_stats=1 \
    -seed="${STAGE_FUZZ_SEED:-1}" -artifact_prefix="$build/findings/$t/" > "$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [[ $rc -ne 0 ]]; then
    status=1
    echo "fuzz: $t FAILED after ${runs:-?} executions (exit $rc): $(ls "$build/findings/$t" | head -3 | tr '\n' ' ')"
    grep -m1 -A12 -E "ERROR|runtime error|deadly signal|timeout" "$log" || true
  else
    echo "fuzz: $t ${runs:-?} executions in ${seconds} s, no finding (corpus: $(ls "$corpus/$t" | wc -l) inputs)"
  fi
done
exit $status
