#!/usr/bin/env bash
# Call 1 of bench/results/wgmma-persistent/: from the repository root on the H200, with the
# build of the persistent wgmma kernels in build-carry/ and the CUDA plugin of 630cacf (the
# bundled kernels) in build-carry/ab-old/. The wgmma GPU tests first (correctness before
# timing), then bench/wgmma-persistent.json in two rounds of three arms: the new build as its
# policy runs it (persistent CTAs where a launch has more items than resident CTAs), the new
# build with TILEPATH_CUDA_WGMMA_PERSISTENT=0 (one CTA per item), and the bundled kernels;
# then compute-sanitizer on two persistent GPU tests. Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W/ab" arm-new arm-old
export TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
nvidia-smi > "$W/smi.txt" 2>&1
cp build-carry/plugins/*.so arm-new/
cp build-carry/plugins/libtilepath_backend_cpu.so build-carry/plugins/libtilepath_backend_sim.so arm-old/
cp build-carry/ab-old/libtilepath_backend_cuda.so arm-old/
date -u +"gpu tests %T" >> "$W/times.txt"
build-carry/gpu-tests/cuda_gpu_tests --gtest_filter='*Wgmma*' > "$W/gpu-tests-wgmma.log" 2>&1
echo "gpu tests rc=$? $(date -u +%T)" >> "$W/times.txt"
run_arm() {  # arm round
  local dir=arm-new switch=""
  [ "$1" = old ] && dir=arm-old
  [ "$1" = off ] && switch=0
  date -u +"$1 round $2 %T" >> "$W/times.txt"
  TILEPATH_CUDA_WGMMA_PERSISTENT=$switch TILEPATH_PLUGIN_PATH=$PWD/$dir build-carry/bin/tilepath sweep \
    bench/wgmma-persistent.json --backend cuda --db "$W/ab/$1-round$2.sqlite" > "$W/sweep-$1-$2.log" 2>&1
}
for arm in on off old; do run_arm $arm 1; done
for arm in old off on; do run_arm $arm 2; done
# The rule, fixed before the call: keep when, over the cases whose grid the policy changed
# (persistent), the geometric mean of on/old latency is <= 0.99, and over the other cases the
# geometric mean of on/old is <= 1.005 (each arm's latency: the median of its two rounds).
python3 - "$W/ab" > "$W/decision.txt" <<'PY'
import math, sqlite3, statistics, sys
def arm(name):
    lat, grid = {}, {}
    for r in (1, 2):
        con = sqlite3.connect(f"{sys.argv[1]}/{name}-round{r}.sqlite")
        for key, g, v in con.execute("SELECT c.case_key, c.grid_x || 'x' || c.grid_y || 'x' || c.grid_z, m.value "
                                     "FROM cases c JOIN measurements m ON m.case_id = c.id "
                                     "AND m.name = 'latency_us' WHERE c.status = 'ok'"):
            lat.setdefault(key, []).append(v)
            grid[key] = g
    return {k: statistics.median(v) for k, v in lat.items()}, grid
on, on_grid = arm("on")
off, _ = arm("off")
old, old_grid = arm("old")
gmean = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
changed = [k for k in on if k in old and on_grid[k] != old_grid[k]]
same = [k for k in on if k in old and on_grid[k] == old_grid[k]]
for k in sorted(on):
    print(f"{k}: grid {old_grid.get(k)} -> {on_grid[k]}; on/old {on[k] / old[k]:.4f}, off/old {off[k] / old[k]:.4f}")
g_changed = gmean([on[k] / old[k] for k in changed])
g_same = gmean([on[k] / old[k] for k in same])
print(f"persistent: {len(changed)} cases, geometric mean on/old {g_changed:.4f}; "
      f"others: {len(same)} cases, {g_same:.4f}; off/old over all: {gmean([off[k] / old[k] for k in off if k in old]):.4f}")
print("keep" if len(changed) + len(same) == 36 and g_changed <= 0.99 and g_same <= 1.005 else "not kept")
PY
date -u +"decision %T: $(tail -1 "$W/decision.txt")" >> "$W/times.txt"
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 build-carry/gpu-tests/cuda_gpu_tests \
    --gtest_filter='Variants/WgmmaPersistentKernel.*/splits_k8v8_fp8_qk_k_only*:Variants/WgmmaPersistentKernel.*/gqa16_k8v8_transform_full*' \
    > "$W/sanitizer-$tool.log" 2>&1
  echo "sanitizer $tool rc=$? $(date -u +%T)" >> "$W/times.txt"
done
tar cJf "$OUT/call.tar.xz" -C "$W" .
