#!/usr/bin/env bash
# Call 5 of bench/results/wgmma-ring/: from the repository root on the H200, with the GPU tests
# and the CUDA plugin of 9ef5ffb (the bundled kernels: every cubin byte-identical) in
# build-carry/: the whole GPU test suite. Its log comes back in $OUT/gpu-tests.log.
set -u
OUT=${OUT:-out}
TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models build-carry/gpu-tests/cuda_gpu_tests \
  > "$OUT/gpu-tests.log" 2>&1
echo "gpu tests rc=$?"
