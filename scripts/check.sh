#!/usr/bin/env bash
# Set-up, build, and every test (unit and lit); fails on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STAGE_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh" --tests
ninja -C "$build" check-stage
