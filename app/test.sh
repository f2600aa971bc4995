#!/usr/bin/env bash
# Sets everything up and runs the test suite (what CI runs). GPU tests (ctest
# label `gpu`) skip with a message when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash app/setup.sh "$@"
export QT_QPA_PLATFORM=offscreen
# Say up front which backends have devices here, and why the others have none.
build/bin/tilepath backends || true
if ! build/bin/tilepath backends --json 2>/dev/null | grep -q '"name": *"cuda"'; then
  echo "GPU tests: the cuda backend is not built here (no nvcc); label gpu has no tests"
elif ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "GPU tests: no CUDA device on this machine; tests labelled gpu will SKIP (see 'tilepath backends' above)"
fi
ctest --test-dir build --output-on-failure -j2
