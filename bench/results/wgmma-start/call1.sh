#!/usr/bin/env bash
# Call 1 of bench/results/wgmma-start/: from the repository root on the H200, with the build of
# the change (the producer's first page-table read at the CTA's start) in build-carry/, its
# trace build's plugin (the K8/V8 wgmma kernels and combine with -DTILEPATH_KERNEL_TRACE) in
# build-carry/trace-plugins/, and the CUDA plugin of 546afaf (the bundled kernels) in
# build-carry/ab-old/. The A/B of bench/wgmma-start.json in two rounds (the builds alternating),
# the paged bounds and the trace at B = 1; then, only if the rule below keeps the change, the
# wgmma GPU tests and every wgmma case of the bundled database again (from the bundled database
# less its wgmma runs). Everything comes back in $OUT/call.tar.xz and $OUT/regen.sqlite.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W/ab" arm-old arm-new
export TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
cp build-carry/plugins/*.so arm-new/
cp build-carry/plugins/libtilepath_backend_cpu.so build-carry/plugins/libtilepath_backend_sim.so arm-old/
cp build-carry/ab-old/libtilepath_backend_cuda.so arm-old/
for round in 1 2; do
  arms="new old"; [ $round = 2 ] && arms="old new"
  for arm in $arms; do
    date -u +"$arm round $round %T" >> "$W/times.txt"
    TILEPATH_PLUGIN_PATH=$PWD/arm-$arm build-carry/bin/tilepath sweep bench/wgmma-start.json --backend cuda \
      --db "$W/ab/$arm-round$round.sqlite" > "$W/sweep-$arm-$round.log" 2>&1
  done
done
export TILEPATH_PLUGIN_PATH=$PWD/arm-new
for sh in 1_32768_32_8 1_32768_8_1 32_32768_8_1; do
  build-carry/bin/paged_read_bound 50 --shape "${sh//_/,}" > "$W/paged-bound-$sh.json" 2> "$W/paged-bound-$sh.err"
done
for shape in 1,32768,32,8 1,32768,8,1; do
  IFS=, read -r b s hq hk <<< "$shape"
  TILEPATH_PLUGIN_PATH=$PWD/build-carry/trace-plugins timeout 100 build-carry/bin/tilepath run --backend cuda \
    --kv k8v8 --k-path fp8_qk --mode k_only --mma wgmma --batch "$b" --context "$s" --q-heads "$hq" --kv-heads "$hk" \
    --head-dim 128 --page-size 16 --cache hbm_cold --repeats 1 --warmup 0 --no-ablations --json \
    --db "$W/trace.sqlite" > "$W/trace-b$b-$hq-$hk.txt" 2>&1
  gzip -9 "$W/trace-b$b-$hq-$hk.txt"
done
rm -f "$W/trace.sqlite"
python3 bench/kernel_trace.py "$W"/trace-*.txt.gz > "$W/trace-summary.txt" 2>&1
# The rule, fixed before the call: keep when the median new/old latency over the 12 B = 1 cases
# is <= 0.99 and the geometric mean over the other 16 is <= 1.005 (medians of the two rounds).
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
b1 = [r for (k, b), r in ratios.items() if b == 1]
rest = [r for (k, b), r in ratios.items() if b != 1]
b1_median = statistics.median(b1)
rest_gmean = math.exp(sum(map(math.log, rest)) / len(rest))
keep = len(b1) == 12 and len(rest) == 16 and b1_median <= 0.99 and rest_gmean <= 1.005
print(f"B=1: {len(b1)} cases, median new/old {b1_median:.4f}; others: {len(rest)} cases, geometric mean {rest_gmean:.4f}")
print("keep" if keep else "not kept")
PY
date -u +"decision %T: $(tail -1 "$W/decision.txt")" >> "$W/times.txt"
if [ "$(tail -1 "$W/decision.txt")" = keep ]; then
  build-carry/gpu-tests/cuda_gpu_tests --gtest_filter='*Wgmma*:CudaPluginRun*' > "$W/gpu-tests-wgmma.log" 2>&1
  echo "gpu tests rc=$? $(date -u +%T)" >> "$W/times.txt"
  python3 - data/h200-sweep.sqlite "$OUT/base.sqlite" <<'PY'
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
c = sqlite3.connect(sys.argv[2])
c.execute("PRAGMA foreign_keys = ON")
c.execute("DELETE FROM runs WHERE id IN (SELECT DISTINCT run_id FROM cases WHERE mma = 'wgmma')")
c.commit()
c.close()
PY
  OUT=$W/regen BUILD=build-carry SWEEP_RESUME=$OUT/base.sqlite SWEEP_SECONDS=${SWEEP_SECONDS:-360} \
    SWEEP_SPEC="data/sweeps/h200-cuda-wgmma.json data/sweeps/h200-cuda-wgmma-16bit.json data/sweeps/h200-cuda-grid.json data/sweeps/h200-cuda-grid-k16v16.json" \
    bash backends/cuda/scripts/device_run.sh sweep > "$W/regen.log" 2>&1
  date -u +"regen done %T" >> "$W/times.txt"
  xz -T0 -c "$W/regen/h200-sweep.sqlite" > "$OUT/regen.sqlite.xz" && rm -f "$W/regen/h200-sweep.sqlite" "$OUT/base.sqlite"
fi
tar cJf "$OUT/call.tar.xz" -C "$W" .
