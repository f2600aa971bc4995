#!/usr/bin/env bash
# Sets everything up and runs the test suite (what CI runs). GPU tests skip
# with a message when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash app/setup.sh "$@"
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure -j2
