#!/usr/bin/env bash
# A second, short call after call1.sh: the same sweep again in a new process (how far the
# stage costs move between processes), then compute-sanitizer on the 16-bit caches'
# compute-side ablations (call 1 sanitized the K8/V8 ones).
#   OUT=$OUT bash bench/results/wgmma-stage-costs/call2.sh
set -u
W=$OUT/work
mkdir -p "$W"
export BUILD=build-carry TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >"$W/smi.txt" 2>&1
OUT=$W SWEEP_SECONDS=200 SWEEP_SPEC="bench/wgmma-stage-costs.json bench/wgmma-stage-costs-16bit.json" \
  bash backends/cuda/scripts/device_run.sh sweep >"$W/sweep-step.log" 2>&1
echo "sweep done at $SECONDS s"
tail -n 2 "$W/sweep-step.log"
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 9 build-carry/gpu-tests/cuda_gpu_tests \
    --gtest_filter='EveryWgmmaKernel/WgmmaIsolatedStages.*k16*:EveryWgmmaKernel/WgmmaIsolatedStages.*k8v16*' \
    >"$W/sanitize-$tool.log" 2>&1
  echo "compute-sanitizer $tool rc=$? at $SECONDS s"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$W/sanitize-$tool.log" | tail -n 3
done
