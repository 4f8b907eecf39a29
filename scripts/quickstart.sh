#!/usr/bin/env bash
# Set-up, build, and the main job on the default example.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/run-example.sh" "$@"
