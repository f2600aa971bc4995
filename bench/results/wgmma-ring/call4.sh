#!/usr/bin/env bash
# Call 4 of bench/results/wgmma-ring/: from the repository root on the H200, with bin/tilepath and
# the CUDA plugin of the change (one qk ahead: a tile's pv in flight while the next tile lands and
# its qk is issued) in build-carry/, and the CUDA plugin of 184b7f8 (the bundled kernels: every
# cubin byte-identical) in build-carry/ab-old/. bench/wgmma-pv-in-flight.json once per build in
# two rounds, alternating; the decision by the rule below; compute-sanitizer on the wgmma cases
# with the change. Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W/ab" arm-old arm-new
export TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
cp build-carry/plugins/libtilepath_backend_cuda.so arm-new/
cp build-carry/ab-old/libtilepath_backend_cuda.so arm-old/
for round in 1 2; do
  arms="new old"; [ $round = 2 ] && arms="old new"
  for arm in $arms; do
    date -u +"$arm round $round %T" >> "$W/times.txt"
    TILEPATH_PLUGIN_PATH=$PWD/arm-$arm build-carry/bin/tilepath sweep bench/wgmma-pv-in-flight.json --backend cuda \
      --db "$W/ab/$arm-round$round.sqlite" > "$W/sweep-$arm-$round.log" 2>&1
  done
done
# The rule, fixed before the call: keep when every case is ok in both builds, the geometric mean
# of new/old latency (medians of the two rounds) over the 32 cases is <= 0.99 and no shape's
# fp8_qk/k_only (the best K8/V8 variant at the targets) is slower than 1.01.
python3 - "$W/ab" > "$W/decision.txt" <<'PY'
import math, sqlite3, statistics, sys
def lat(arm):
    out, bad = {}, 0
    for r in (1, 2):
        con = sqlite3.connect(f"{sys.argv[1]}/{arm}-round{r}.sqlite")
        for key, status, b, s, hq, kp, mode, v in con.execute(
                "SELECT c.case_key, c.status, c.batch, c.context, c.q_heads, c.k_path, c.mode, m.value FROM cases c "
                "LEFT JOIN measurements m ON m.case_id = c.id AND m.name = 'latency_us'"):
            if status != "ok" or v is None:
                bad += 1
                continue
            out.setdefault((key, b, s, hq, kp, mode), []).append(v)
    return {k: statistics.median(v) for k, v in out.items()}, bad
(new, bad_new), (old, bad_old) = lat("new"), lat("old")
ratios = {k: new[k] / old[k] for k in new if k in old}
gmean = math.exp(sum(map(math.log, ratios.values())) / max(1, len(ratios)))
worst_k_only = max((r for k, r in ratios.items() if k[4] == "fp8_qk" and k[5] == "k_only"), default=float("nan"))
for k in sorted(ratios, key=lambda k: (k[1], k[2], k[3], k[4], k[5])):
    print(f"B={k[1]} S={k[2]} Hq={k[3]} {k[4]}/{k[5]}: old {old[k]:.2f} new {new[k]:.2f} us, new/old {ratios[k]:.4f}")
print(f"{len(ratios)} cases, not ok: new {bad_new}, old {bad_old}; geometric mean new/old {gmean:.4f}; "
      f"worst fp8_qk/k_only {worst_k_only:.4f}")
keep = bad_new == 0 and bad_old == 0 and len(ratios) == 32 and gmean <= 0.99 and worst_k_only <= 1.01
print("keep" if keep else "not kept")
PY
date -u +"decision %T: $(tail -1 "$W/decision.txt")" >> "$W/times.txt"
OUT=$W/san BUILD=build-carry SANITIZE_MATCH=wgmma timeout 200 bash backends/cuda/scripts/device_run.sh sanitize \
  > "$W/sanitize.log" 2>&1
echo "sanitize rc=$? $(date -u +%T)" >> "$W/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
