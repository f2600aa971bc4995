#!/usr/bin/env bash
# One device call: the wgmma kernels' compute side (D = 128) checked, then timed.
#   1. the GPU tests of the new kernels: the wgmma compute_only (geometry, occupancy, its zero
#      output) and isolated kernels of every variant
#   2. bench/wgmma-stage-costs.json and bench/wgmma-stage-costs-16bit.json with stage costs,
#      cold, into one database ($OUT/work/h200-sweep.sqlite), for docs/performance.md
#   3. in the time left: compute-sanitizer memcheck and racecheck on the K8/V8 compute-side
#      ablations, then the GPU tests of the other ablations (the wgmma load_only, the mma.sync
#      isolated kernels, whose lookup now refuses a one-head ablation of a two-head kernel)
# From the repository root on the H200, with the build in build-carry/ (bin, plugins, gpu-tests):
#   OUT=$OUT bash bench/results/wgmma-stage-costs/call1.sh
# CALL_SECONDS (default 570) is the time the call may take, SWEEP_SECONDS (default 330) the sweep's.
set -u
CALL_SECONDS=${CALL_SECONDS:-570}
W=$OUT/work
mkdir -p "$W"
export BUILD=build-carry TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models
export PATH=$PATH:/usr/local/cuda/bin
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu --format=csv
  date -u
} >"$W/smi.txt" 2>&1

TESTS=build-carry/gpu-tests/cuda_gpu_tests
# The new kernels first: that each finishes, at the real kernel's occupancy (a hang ends here).
timeout 60 "$TESTS" --gtest_filter='WgmmaIsolatedStageTable.*:EveryWgmmaKernel/WgmmaIsolatedStages.*' \
  --gtest_output=xml:"$W/gpu-tests-new.xml" >"$W/gpu-tests-new.log" 2>&1
echo "new kernels' GPU tests rc=$? at $SECONDS s"
tail -n 3 "$W/gpu-tests-new.log"

# The measurement, while most of the call is left.
OUT=$W SWEEP_SECONDS=${SWEEP_SECONDS:-330} SWEEP_SPEC="bench/wgmma-stage-costs.json bench/wgmma-stage-costs-16bit.json" \
  bash backends/cuda/scripts/device_run.sh sweep >"$W/sweep-step.log" 2>&1
echo "sweep done at $SECONDS s"
tail -n 4 "$W/sweep-step.log"

# Then, in the time left (CALL_SECONDS): the sanitizers on the new kernels, and the
# other ablations' tests.
left() { echo $((CALL_SECONDS - SECONDS)); }
for tool in memcheck racecheck; do
  if [ "$(left)" -le 30 ]; then echo "compute-sanitizer $tool not run: $SECONDS s elapsed"; continue; fi
  budget=$(left)
  [ "$budget" -gt 110 ] && budget=110
  timeout "$budget" compute-sanitizer --tool "$tool" --error-exitcode 9 \
    "$TESTS" --gtest_filter='EveryWgmmaKernel/WgmmaIsolatedStages.*k8v8*' >"$W/sanitize-$tool.log" 2>&1
  echo "compute-sanitizer $tool rc=$? at $SECONDS s"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$W/sanitize-$tool.log" | tail -n 2
done
if [ "$(left)" -gt 20 ]; then
  timeout "$(left)" "$TESTS" --gtest_filter='EveryWgmmaKernel/WgmmaLoadOnly.*:AllD128Variants/*' \
    --gtest_output=xml:"$W/gpu-tests-others.xml" >"$W/gpu-tests-others.log" 2>&1
  echo "other ablations' GPU tests rc=$? at $SECONDS s"
else
  echo "other ablations' GPU tests not run: $SECONDS s elapsed"
fi
tar cf - -C "$OUT" work | xz -6 -T4 >"$OUT/call.tar.xz"
