#!/usr/bin/env bash
# One device call: the whole GPU test suite on the build in build-carry/; `device_run.sh
# breakdown` (each kernel of the peers file's K8/V8 step at the split-KV shapes and B=64, S=4096,
# timed alone under ncu, beside the event-timed step); and the cubin check of `tilepath attach`
# end to end (a case stored by `tilepath run`, an ncu CSV of another process of the same build
# attached to it). Everything comes back in one archive, $OUT/call.tar.gz. From the repository
# root on the H200:
#   OUT=$OUT bash bench/results/device-checks/gpu-tests-and-breakdown.sh
set -u
W=$OUT/work
mkdir -p "$W"
export BUILD=build-carry
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu --format=csv
  date -u
} >"$W/smi.txt" 2>&1
TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins \
  build-carry/gpu-tests/cuda_gpu_tests >"$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? at $SECONDS s"
tail -n 3 "$W/gpu-tests.log"
OUT=$W bash backends/cuda/scripts/device_run.sh breakdown >"$W/breakdown.log" 2>&1
echo "breakdown rc=$? at $SECONDS s"
grep -E "^B=|latency|of a stream" "$W/breakdown.log"

export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins PATH=$PATH:/usr/local/cuda/bin
OP=(--kv k8v8 --k-path fp8_qk --mode k_only --mma wgmma --batch 16 --context 4096 --q-heads 32 --kv-heads 8
    --head-dim 128 --page-size 16 --cache hbm_cold)
build-carry/bin/tilepath run --backend cuda --db "$W/attach.sqlite" "${OP[@]}" --no-ablations >"$W/attach-run.txt" 2>&1
echo "run rc=$?: $(grep -E '^cubin' "$W/attach-run.txt")"
ncu --clock-control none --csv --page raw --print-units base --metrics gpu__time_duration.sum \
  --kernel-name regex:'decode_attention_kernel|decode_wgmma_kernel' --launch-count 1 \
  build-carry/bin/tilepath run --backend cuda --db /tmp/attach-ncu.sqlite "${OP[@]}" --repeats 1 --warmup 0 \
  --no-ablations >"$W/attach-ncu.csv" 2>&1
echo "ncu rc=$?"
build-carry/bin/tilepath attach --db "$W/attach.sqlite" --ncu-csv --file "$W/attach-ncu.csv" --mime text/csv \
  "${OP[@]}" >"$W/attach.txt" 2>&1
echo "attach rc=$?: $(grep -E '^cubin' "$W/attach.txt")"
tar -C "$W" -czf "$OUT/call.tar.gz" . && rm -rf "$W"
