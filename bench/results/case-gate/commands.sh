#!/usr/bin/env bash
# The gate on the speed runs' own inputs, on an H200: the GPU tests, then the headline
# shape (B=64, S=4096, Hq/Hk 32/8, D 128, HBM-cold) on Gaussian and Qwen-like keys for
# the K8/V8 paths and K16/V8, each case's kernel check and gate side by side.
# Run from the repository root on the GPU machine with the Qt-free CUDA build in
# $BUILD (default build-device); results go to $OUT.
set -u -o pipefail
R=$PWD
BUILD=${BUILD:-build-device}
OUT=${OUT:-$R/out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
OUT=$OUT BUILD=$BUILD bash backends/cuda/scripts/device_run.sh sanity tests
export TILEPATH_PLUGIN_PATH=$R/$BUILD/plugins TILEPATH_MODELS_DIR=$R/models
T=$R/$BUILD/bin/tilepath
DB=$OUT/case-gate.sqlite
SHAPE=(--batch 64 --context 4096 --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 16 --cache hbm_cold)
for keys in gaussian qwen_bias; do
  for variant in "k8v8 transform full" "k8v8 fp8_qk k_only" "k8v8 fp8_qk full" "k16v8 k16 full"; do
    set -- $variant
    echo "== $keys $variant"
    "$T" run --backend cuda "${SHAPE[@]}" --kv "$1" --k-path "$2" --mode "$3" --keys "$keys" --seed 1 \
      --db "$DB"
  done
done 2>&1 | tee "$OUT/case-gate-runs.txt"
"$T" report --db "$DB" --format csv > "$OUT/case-gate-report.csv"
