#!/usr/bin/env bash
# Set-up, build, and every test (unit and lit); fails on any failure.
#
#   scripts/check.sh              # the Release build in build/
#   scripts/check.sh --sanitize   # AddressSanitizer + UndefinedBehavior-
#                                 # Sanitizer build in build-sanitize/
#
# The sanitized build instruments stage's own code only: Debian's libMLIR
# and libLLVM are not instrumented. Hence (docs/Testing.md):
#  - allow_user_poisoning=0: LLVM's allocators (inlined from its headers
#    into stage's code) poison and unpoison their slabs, but the library's
#    own copies of them do not, so ASan would report reads of memory the
#    library handed out;
#  - detect_container_overflow=0: the same for std::vector's annotations
#    across the two;
#  - handle_segv=0 (and the others): the tools' own crash handler, which
#    a test checks, reports signals;
#  - -fno-sanitize=vptr: LLVM is built without RTTI.
# Any report aborts the tool (abort_on_error), so that it fails its test
# even under `not`, which passes any non-zero exit but not a signal.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [[ "${1:-}" != "--sanitize" ]]; then
  build="${STAGE_BUILD_DIR:-$root/build}"
  "$root/scripts/setup.sh" --tests
  ninja -C "$build" check-stage
  exit 0
fi

build="${STAGE_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
# The packages (and the Release build, which the set-up makes anyway).
"$root/scripts/setup.sh" --tests
flags="-O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined"
flags+=" -fno-sanitize=vptr -fno-sanitize-recover=all"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="$flags -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELEASE="$flags -DNDEBUG" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
fi
export ASAN_OPTIONS="allow_user_poisoning=0:detect_container_overflow=0:handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:detect_leaks=1:halt_on_error=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
ninja -C "$build" -j "${STAGE_JOBS:-$(nproc)}" check-stage
