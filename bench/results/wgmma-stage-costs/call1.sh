#!/usr/bin/env bash
# One device call: the wgmma kernels' compute side (D = 128) checked, then timed.
#   1. the GPU tests of every ablation table and launch: the wgmma compute_only (geometry,
#      occupancy, its zero output) and isolated kernels, the wgmma load_only kernels, the mma.sync
#      isolated kernels (whose lookup now refuses a one-head ablation of a two-head kernel)
#   2. compute-sanitizer memcheck and racecheck on the wgmma compute-side ablations' tests
#   3. bench/wgmma-stage-costs.json and bench/wgmma-stage-costs-16bit.json with stage costs,
#      cold, into one database ($OUT/work/h200-sweep.sqlite), for `tilepath analyze` and
#      `tilepath model ii` on the build machine
# From the repository root on the H200, with the build in build-carry/ (bin, plugins, gpu-tests):
#   OUT=$OUT bash bench/results/wgmma-stage-costs/call1.sh
set -u
W=$OUT/work
mkdir -p "$W"
export BUILD=build-carry TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models
export PATH=$PATH:/usr/local/cuda/bin
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu --format=csv
  date -u
} >"$W/smi.txt" 2>&1

TESTS=build-carry/gpu-tests/cuda_gpu_tests
timeout 150 "$TESTS" --gtest_filter='WgmmaIsolatedStageTable.*:EveryWgmmaKernel/*:AllD128Variants/*' \
  --gtest_output=xml:"$W/gpu-tests.xml" >"$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? at $SECONDS s"
tail -n 3 "$W/gpu-tests.log"

for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 \
    "$TESTS" --gtest_filter='EveryWgmmaKernel/WgmmaIsolatedStages.*' >"$W/sanitize-$tool.log" 2>&1
  echo "compute-sanitizer $tool rc=$? at $SECONDS s"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$W/sanitize-$tool.log" | tail -n 2
done

OUT=$W SWEEP_SECONDS=$((540 - SECONDS)) SWEEP_SPEC="bench/wgmma-stage-costs.json bench/wgmma-stage-costs-16bit.json" \
  bash backends/cuda/scripts/device_run.sh sweep >"$W/sweep-step.log" 2>&1
echo "sweep done at $SECONDS s"
tail -n 4 "$W/sweep-step.log"
tar cf - -C "$OUT" work | xz -6 -T4 >"$OUT/call.tar.xz"
