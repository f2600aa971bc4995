#!/usr/bin/env bash
# Call 2 of bench/results/wgmma-steal/: the wgmma kernels that hand tiles out at run time
# (backends/cuda/kernels/decode_wgmma_steal.cuh) against the plain ones, in one build. From the
# repository root on the H200 with the build of this tree in build-carry/ (tilepath, the
# plugins, the GPU tests): the stealing kernels' GPU tests
# (correctness first; again with no stream stolen from; compute-sanitizer on the cases call 1
# failed), then bench/wgmma-steal.json in two rounds of three arms: plain,
# TILEPATH_CUDA_WGMMA_STEAL=4 and =16 (a stream is stolen from while at least 4 or 16 of its
# tiles are unclaimed). Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins PATH=$PATH:/usr/local/cuda/bin
nvidia-smi > "$W/smi.txt" 2>&1
date -u +"gpu tests %T" >> "$W/times.txt"
timeout 120 build-carry/gpu-tests/cuda_gpu_tests --gtest_filter='*WgmmaStealKernel*' > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? $(date -u +%T); $(grep -E '^\[  (PASSED|FAILED)' "$W/gpu-tests.log" | tr '\n' ' ')" >> "$W/times.txt"
# the same tests with the stealing kernels' own path only (no stream has a million tiles unclaimed)
TILEPATH_CUDA_WGMMA_STEAL=1000000 timeout 120 build-carry/gpu-tests/cuda_gpu_tests --gtest_filter='*WgmmaStealKernel*' \
  > "$W/gpu-tests-no-thieves.log" 2>&1
echo "gpu tests, no thieves rc=$? $(date -u +%T); $(grep -E '^\[  (PASSED|FAILED)' "$W/gpu-tests-no-thieves.log" | tr '\n' ' ')" >> "$W/times.txt"
for run in memcheck:uneven_splits_k8v8_fp8_qk_full racecheck:auto_splits_k8v8_fp8_qk_k_only \
  memcheck:auto_splits_k8v8_fp8_qk_k_only; do
  tool=${run%%:*} case=${run#*:}
  timeout 120 compute-sanitizer --tool $tool --show-backtrace device build-carry/gpu-tests/cuda_gpu_tests \
    --gtest_filter="*WgmmaStealKernel*/${case}*" > "$W/sanitizer-$tool-$case.log" 2>&1
  echo "$tool $case rc=$? $(date -u +%T); $(grep -E 'ERROR SUMMARY|PASSED|FAILED  \]' "$W/sanitizer-$tool-$case.log" | head -3 | tr '\n' ' ')" >> "$W/times.txt"
done
mkdir -p "$W/ab"
for round in 1 2; do
  arms="plain steal4 steal16"; [ $round = 2 ] && arms="steal16 steal4 plain"
  for arm in $arms; do
    date -u +"$arm round $round %T" >> "$W/times.txt"
    switch=""; [ $arm = steal4 ] && switch=4; [ $arm = steal16 ] && switch=16
    TILEPATH_CUDA_WGMMA_STEAL=$switch timeout 100 build-carry/bin/tilepath sweep bench/wgmma-steal.json --backend cuda \
      --db "$W/ab/$arm-round$round.sqlite" > "$W/sweep-$arm-$round.log" 2>&1
    echo "  rc=$?" >> "$W/times.txt"
  done
done
# The rule, fixed before the call: build stealing into the policy when, for fp8_qk/k_only or
# fp8_qk/full, an arm's latency (median of its two rounds) is <= 0.98 of plain at both
# B = 64 S = 4096 and B = 128 S = 2048 and the geometric mean over that mode's other cases is
# <= 1.005 of plain.
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
for arm in ("steal4", "steal16"):
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
print("keep: " + ", ".join(keep) if keep else "not kept")
PY
date -u +"decision %T: $(tail -1 "$W/decision.txt")" >> "$W/times.txt"
cp "$W/times.txt" "$OUT/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
