#!/usr/bin/env bash
# Call 4 of bench/results/wgmma-steal/: the wgmma kernels that hand tiles out at run time
# (backends/cuda/kernels/decode_wgmma_steal.cuh) against the plain ones, in one build. From the
# repository root on the H200 with the build of this tree in build-carry/ (tilepath, the
# plugins, the GPU tests), the workspace laid out by its capacity: the stealing kernels' GPU
# cases twice over in one process; then bench/wgmma-steal.json in two rounds of four arms:
# plain, the stealing kernel with claims but no thieves (TILEPATH_CUDA_WGMMA_STEAL=1000000), and
# stealing (=4 and =16).
# Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins PATH=$PATH:/usr/local/cuda/bin
nvidia-smi > "$W/smi.txt" 2>&1
date -u +"gpu tests %T" >> "$W/times.txt"
timeout 200 build-carry/gpu-tests/cuda_gpu_tests --gtest_filter='*WgmmaStealKernel*' --gtest_repeat=2 > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? $(date -u +%T); passed $(grep -c '^\[       OK' "$W/gpu-tests.log") of 64; $(grep -E '^\[  FAILED  \] [0-9]' "$W/gpu-tests.log" | tr '\n' ' ')" >> "$W/times.txt"
mkdir -p "$W/ab"
for round in 1 2; do
  arms="plain nothieves steal4 steal16"; [ $round = 2 ] && arms="steal16 steal4 nothieves plain"
  for arm in $arms; do
    date -u +"$arm round $round %T" >> "$W/times.txt"
    switch="" claims=""
    [ $arm = steal4 ] && switch=4
    [ $arm = nothieves ] && switch=1000000
    [ $arm = steal16 ] && switch=16
    TILEPATH_CUDA_WGMMA_STEAL=$switch TILEPATH_CUDA_WGMMA_STEAL_CLAIMS=$claims timeout 100 build-carry/bin/tilepath \
      sweep bench/wgmma-steal.json --backend cuda --db "$W/ab/$arm-round$round.sqlite" > "$W/sweep-$arm-$round.log" 2>&1
    echo "  rc=$?" >> "$W/times.txt"
  done
done
# No rule: this call measures what stealing itself wins (steal4 and steal16 against nothieves,
# the same kernel and claims) beside their cost against plain; decision.txt lists every ratio.
python3 - "$W/ab" > "$W/decision.txt" <<'PY'
import math, sqlite3, statistics, sys
def lat(arm):
    out = {}
    for r in (1, 2):
        con = sqlite3.connect(f"{sys.argv[1]}/{arm}-round{r}.sqlite")
        for b, s, mode, name, v in con.execute(
                "SELECT c.batch, c.context, c.mode, c.kernel_name, m.value FROM cases c JOIN measurements m "
                "ON m.case_id = c.id AND m.name = 'latency_us' WHERE c.status = 'ok'"):
            out.setdefault((b, s, mode), []).append((v, name))
    return {k: (statistics.median(x[0] for x in v), v[0][1]) for k, v in out.items()}
plain = lat("plain")
gmean = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
keep = []
for arm in ("nothieves", "steal4", "steal16"):
    a = lat(arm)
    for mode in sorted({k[2] for k in plain}):
        keys = sorted(k for k in plain if k[2] == mode and k in a)
        for k in keys:
            print(f"{arm} {k}: {a[k][0]:.2f} / {plain[k][0]:.2f} us = {a[k][0] / plain[k][0]:.4f} ({a[k][1]} / {plain[k][1]})")
        targets = [(64, 4096, mode), (128, 2048, mode)]
        others = [k for k in keys if k not in targets]
        r_t = [a[k][0] / plain[k][0] for k in targets if k in a and k in plain]
        g = gmean([a[k][0] / plain[k][0] for k in others])
        print(f"{arm} {mode}: targets {['%.4f' % x for x in r_t]}, others geometric mean {g:.4f}")
        if len(r_t) == 2 and max(r_t) <= 0.98 and g <= 1.005:
            keep.append(f"{arm} {mode}")
print("no rule in this call: the ratios above")
PY
date -u +"decision %T: $(tail -1 "$W/decision.txt")" >> "$W/times.txt"
cp "$W/times.txt" "$OUT/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
