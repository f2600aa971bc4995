#!/usr/bin/env bash
# Call 5 of bench/results/wgmma-steal/: where the stealing kernel's form costs (call 3: 3-18%
# over the plain kernel with nothing claimed), from Nsight Compute. From the repository root on
# the H200 with the build of commit f9a92cb in build-carry/ (the pack of call 4). One launch of
# the main kernel per shape and arm, HBM-cold: the plain wgmma kernel, and the stealing kernel
# with every owner taking all its tiles without a claim (TILEPATH_CUDA_WGMMA_STEAL=1000000
# TILEPATH_CUDA_WGMMA_STEAL_CLAIMS=0): the warp-state sections as CSV and the raw stall ratios.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
for shape in 16,32768,k_only 16,32768,full 64,4096,k_only; do
  IFS=, read -r b s mode <<< "$shape"
  op=(--kv k8v8 --k-path fp8_qk --mode "$mode" --mma wgmma --batch "$b" --context "$s" --q-heads 32 --kv-heads 8
      --head-dim 128 --page-size 16 --cache hbm_cold)
  for arm in plain noclaims; do
    name=b${b}-s${s}-${mode}-${arm}
    steal="" claims=""
    [ $arm = noclaims ] && steal=1000000 claims=0
    TILEPATH_CUDA_WGMMA_STEAL=$steal TILEPATH_CUDA_WGMMA_STEAL_CLAIMS=$claims timeout 120 ncu --clock-control none \
      --csv --page details --section WarpStateStats --section SchedulerStats --section InstructionStats \
      --section LaunchStats --section MemoryWorkloadAnalysis --kernel-name regex:decode_wgmma --launch-count 1 \
      build-carry/bin/tilepath run --backend cuda --db /tmp/ncu.sqlite "${op[@]}" --repeats 1 --warmup 0 \
      --no-ablations > "$W/sections-$name.csv" 2>&1
    echo "$name sections rc=$?" >> "$W/times.txt"
    TILEPATH_CUDA_WGMMA_STEAL=$steal TILEPATH_CUDA_WGMMA_STEAL_CLAIMS=$claims timeout 120 ncu --clock-control none \
      --csv --page raw --print-units base \
      --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,gpu__time_duration.sum,dram__bytes_read.sum,smsp__warps_active.avg.per_cycle_active' \
      --kernel-name regex:decode_wgmma --launch-count 1 \
      build-carry/bin/tilepath run --backend cuda --db /tmp/ncu.sqlite "${op[@]}" --repeats 1 --warmup 0 \
      --no-ablations > "$W/stalls-$name.csv" 2>&1
    echo "$name stalls rc=$?" >> "$W/times.txt"
  done
done
cp "$W/times.txt" "$OUT/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
