#!/usr/bin/env bash
# Call 5 of bench/results/wgmma-start-chain/: from the repository root on the H200, with the build
# of the change (page-table entries read a ring's depth of tiles ahead) in build-carry/ (bin,
# plugins, gpu-tests, paged_read_bound, and its trace plugin in trace-plugins/), the CUDA plugin
# of the kernels before it in build-carry/ab-old/, and build-pack/base.sqlite.xz (the bundled
# database less its wgmma runs). The A/B of bench/wgmma-start-chain.json in two rounds (the
# builds alternating), the paged bounds at B = 1 and the change's trace at two shapes; then, only
# if the rule below keeps the change, the GPU tests, three compute-sanitizer tools on four wgmma
# tests, and the bundled wgmma cases again until SWEEP_SECONDS. Everything comes back in
# $OUT/call.tar.xz and $OUT/regen.sqlite.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W/ab" arm-old arm-new
export TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
cp build-carry/plugins/*.so arm-new/
cp build-carry/plugins/libtilepath_backend_cpu.so build-carry/plugins/libtilepath_backend_sim.so arm-old/
cp build-carry/ab-old/libtilepath_backend_cuda.so arm-old/
for round in 1 2; do
  arms="new old"; [ $round = 2 ] && arms="old new"
  for arm in $arms; do
    date -u +"$arm round $round %T" >> "$W/times.txt"
    TILEPATH_PLUGIN_PATH=$PWD/arm-$arm build-carry/bin/tilepath sweep bench/wgmma-start-chain.json --backend cuda \
      --db "$W/ab/$arm-round$round.sqlite" > "$W/sweep-$arm-$round.log" 2>&1
  done
done
for sh in 1_32768_32_8 1_32768_8_1 32_32768_8_1; do
  build-carry/bin/paged_read_bound 50 --shape "${sh//_/,}" > "$W/paged-bound-$sh.json" 2> "$W/paged-bound-$sh.err"
done
for shape in 1,32768,32,8 16,32768,32,8; do
  IFS=, read -r b s hq hk <<< "$shape"
  name=b${b}-s${s}-${hq}-${hk}
  TILEPATH_PLUGIN_PATH=$PWD/build-carry/trace-plugins timeout 100 build-carry/bin/tilepath run --backend cuda \
    --kv k8v8 --k-path fp8_qk --mode k_only --mma wgmma --batch "$b" --context "$s" --q-heads "$hq" --kv-heads "$hk" \
    --head-dim 128 --page-size 16 --cache hbm_cold --repeats 3 --warmup 1 --no-ablations --json \
    --db "$W/trace.sqlite" > "$W/trace-$name.txt" 2>&1
  python3 bench/kernel_trace.py "$W/trace-$name.txt" >> "$W/trace-summary.txt" 2>&1
  rm -f "$W/trace-$name.txt"
done
rm -f "$W/trace.sqlite"
# The rule, fixed before the call: keep when the geometric mean of new/old latency over all 52
# cases is <= 0.995 and no case is slower than 1.02 (medians of the two rounds).
python3 - "$W/ab" > "$W/decision.txt" <<'PY'
import math, sqlite3, statistics, sys
def lat(arm):
    out = {}
    for r in (1, 2):
        con = sqlite3.connect(f"{sys.argv[1]}/{arm}-round{r}.sqlite")
        for key, b, v in con.execute("SELECT c.case_key, c.batch, m.value FROM cases c JOIN measurements m "
                                     "ON m.case_id = c.id AND m.name = 'latency_us' WHERE c.status = 'ok'"):
            out.setdefault((key, b), []).append(v)
    return {k: statistics.median(v) for k, v in out.items()}
new, old = lat("new"), lat("old")
ratios = {k: new[k] / old[k] for k in new if k in old}
values = list(ratios.values())
gmean = math.exp(sum(map(math.log, values)) / len(values))
keep = len(values) == 52 and gmean <= 0.995 and max(values) <= 1.02
print(f"{len(values)} cases: geometric mean new/old {gmean:.4f}, min {min(values):.4f}, max {max(values):.4f}")
print("keep" if keep else "not kept")
PY
date -u +"decision %T: $(tail -1 "$W/decision.txt")" >> "$W/times.txt"
if [ "$(tail -1 "$W/decision.txt")" = keep ]; then
  export TILEPATH_PLUGIN_PATH=$PWD/arm-new
  build-carry/gpu-tests/cuda_gpu_tests > "$W/gpu-tests.log" 2>&1
  echo "gpu tests rc=$? $(date -u +%T)" >> "$W/times.txt"
  F='Variants/WgmmaKernel.*/ragged_k8v8_fp8_qk_full_d128*:Variants/WgmmaKernel.*/one_token_k16v8*:K8V8/WgmmaTwoHeadKernel.*/ragged_k8v8_fp8_qk_full_d128*:K8V8/WgmmaTwoHeadKernel.*/head_dim_splits_k8v8_fp8_qk_k_only_d64*'
  for t in memcheck racecheck synccheck; do
    compute-sanitizer --tool $t --error-exitcode 3 build-carry/gpu-tests/cuda_gpu_tests --gtest_filter="$F" \
      > "$W/sanitizer-$t.log" 2>&1
    echo "compute-sanitizer $t rc=$? $(date -u +%T)" >> "$W/times.txt"
  done
  xz -dc build-pack/base.sqlite.xz > /tmp/base.sqlite
  for n in h200-cuda-wgmma h200-cuda-grid h200-cuda-grid-k16v16; do
    python3 -c "import json,sys; s=json.load(open('data/sweeps/$n.json')); s['axes']['mma']=['wgmma']; json.dump(s,open('/tmp/$n.json','w'),indent=1)"
  done
  OUT=$W/regen BUILD=build-carry SWEEP_RESUME=/tmp/base.sqlite SWEEP_SECONDS=${SWEEP_SECONDS:-300} \
    SWEEP_SPEC="/tmp/h200-cuda-wgmma.json data/sweeps/h200-cuda-wgmma-16bit.json /tmp/h200-cuda-grid.json /tmp/h200-cuda-grid-k16v16.json" \
    bash backends/cuda/scripts/device_run.sh sweep > "$W/regen.log" 2>&1
  date -u +"regen stopped %T" >> "$W/times.txt"
  xz -T0 -c "$W/regen/h200-sweep.sqlite" > "$OUT/regen.sqlite.xz" && rm -f "$W/regen/h200-sweep.sqlite"
fi
tar cJf "$OUT/call.tar.xz" -C "$W" .
