#!/usr/bin/env bash
# Call 6 of bench/results/wgmma-start-chain/: where the wgmma kernels' warps stall, from Nsight
# Compute, from the repository root on the H200 with this tree's build in build-carry/. One
# launch of the main kernel per shape (fp8_qk/k_only on wgmma, HBM-cold): the warp-state
# sections as CSV, and the raw stall ratios the project's ncu step collects.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
for shape in 1,32768,32,8,128 16,32768,32,8,128 64,4096,32,8,128 64,4096,32,8,64; do
  IFS=, read -r b s hq hk d <<< "$shape"
  name=b${b}-s${s}-${hq}-${hk}-d${d}
  op=(--kv k8v8 --k-path fp8_qk --mode k_only --mma wgmma --batch "$b" --context "$s" --q-heads "$hq"
      --kv-heads "$hk" --head-dim "$d" --page-size 16 --cache hbm_cold)
  timeout 120 ncu --clock-control none --csv --page details --section WarpStateStats --section SchedulerStats \
    --section InstructionStats --section LaunchStats --kernel-name regex:decode_wgmma_kernel --launch-count 1 \
    build-carry/bin/tilepath run --backend cuda --db /tmp/ncu.sqlite "${op[@]}" --repeats 1 --warmup 0 \
    --no-ablations > "$W/sections-$name.csv" 2>&1
  echo "$name sections rc=$?" >> "$W/times.txt"
  timeout 120 ncu --clock-control none --csv --page raw --print-units base \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,gpu__time_duration.sum' \
    --kernel-name regex:decode_wgmma_kernel --launch-count 1 \
    build-carry/bin/tilepath run --backend cuda --db /tmp/ncu.sqlite "${op[@]}" --repeats 1 --warmup 0 \
    --no-ablations > "$W/stalls-$name.csv" 2>&1
  echo "$name stalls rc=$?" >> "$W/times.txt"
done
tar cJf "$OUT/call.tar.xz" -C "$W" .
