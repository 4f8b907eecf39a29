#!/usr/bin/env bash
# Installs the Debian packages stage needs (only those missing; `apt-get
# update` only when something is missing), then configures and builds with
# Ninja into build/. Safe to re-run: an up-to-date tree rebuilds nothing.
#
#   scripts/setup.sh [--tests]   # --tests: also what the tests need
#                                # (headless Chromium for the HTML report,
#                                # the runtime libraries of ASTRA-sim)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STAGE_BUILD_DIR:-$root/build}"

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools lld-22
  protobuf-compiler libprotobuf-dev python3-protobuf
  libgtest-dev cmake ninja-build ccache g++ python3
)
if [[ "${1:-}" == "--tests" ]]; then
  packages+=(chromium libyaml-cpp0.7 libprotobuf32)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages and not root; run as root or install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
jobs="${STAGE_JOBS:-$(nproc)}"
ninja -C "$build" -j "$jobs" all
