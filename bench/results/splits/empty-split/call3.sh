#!/usr/bin/env bash
# Call 3 of bench/results/splits/empty-split/: the A/B behind docs/performance.md's "Where the
# wgmma fp8_qk path is slower than mma.sync, and why", again with the kernels of today: each
# fp8_qk kernel of both families beside its load_only, both caches, in one process, at issue
# 18's floor-target shapes and every bundled shape where wgmma is within 2% of mma.sync or
# slower (33 shapes, 132 cases; the earlier file, of 2026-12-03, predates the kernels' faster
# start, the two-head D = 64 kernels and the cluster launch, and lacks Hq/Hk 16/2 at B = 1,
# S = 4096). The spec is
#   python3 bench/wgmma_ab_spec.py --db data/h200-sweep.sqlite --margin 0.02
# on the bundled database of main at 2026-12-05 (wgmma-vs-mma-sync-load-only.json here).
# PLUGINS names the plugin folder of build-carry/ whose split policy ships: plugins-nonempty
# (the default) once policy.diff lands, plugins if it does not. From the repository root on
# the H200, build-carry/ as for call1.sh; AB_RESUME=<a returned ab.sqlite> resumes a cut sweep.
# Everything comes back in $OUT/call.tar.xz.
#   OUT=$OUT bash bench/results/splits/empty-split/call3.sh
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
PLUGINS=${PLUGINS:-plugins-nonempty}
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/$PLUGINS PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
if [ -n "${AB_RESUME:-}" ]; then cp "$AB_RESUME" "$W/ab.sqlite"; fi
date -u +"a/b ($PLUGINS) %T" >> "$W/times.txt"
# A cut sweep commits what it finished, and the archive is still written inside a 600-s call.
timeout --signal=INT --kill-after=20 500 build-carry/bin/tilepath sweep \
  bench/results/splits/empty-split/wgmma-vs-mma-sync-load-only.json --backend cuda --db "$W/ab.sqlite" > "$W/ab.log" 2>&1
echo "  rc=$? $(tail -n 1 "$W/ab.log")" >> "$W/times.txt"
date -u +"done %T" >> "$W/times.txt"
cat "$W/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
