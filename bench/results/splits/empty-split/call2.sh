#!/usr/bin/env bash
# Call 2 of bench/results/splits/empty-split/: under the policy that launches only the splits
# holding tokens (policy.diff), the 130 bundled cases whose launch had an empty split, measured
# again through the narrowed specs of regen-specs/ into one database, then the one row of
# bench/peers.py whose launch the policy changes (B = 1, S = 32768, Hq/Hk 32/8) with its paged
# read bound. From the repository root on the H200, with build-carry/ as for call1.sh and
# bin/paged_read_bound (bench/paged_read_bound.cu). Everything comes back in $OUT/call.tar.xz.
#   OUT=$OUT bash bench/results/splits/empty-split/call2.sh
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins-nonempty PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1

# Each step gets what is left of 480 s, so that the archive is written inside a 600-s call; a
# sweep cut short commits the cases it finished; REGEN_RESUME=<the returned regen.sqlite>
# resumes it in a later call (the sweep skips the cases it holds).
if [ -n "${REGEN_RESUME:-}" ]; then cp "$REGEN_RESUME" "$W/regen.sqlite"; fi
deadline=$(($(date +%s) + 480))
left() { local l=$((deadline - $(date +%s))); echo $((l < 1 ? 1 : l)); }
for spec in h200-cuda h200-cuda-wgmma h200-cuda-wgmma-16bit h200-cuda-grid h200-cuda-grid-k16v16 h200-prebias; do
  date -u +"$spec %T" >> "$W/times.txt"
  timeout --signal=INT --kill-after=20 "$(left)" build-carry/bin/tilepath sweep \
    "bench/results/splits/empty-split/regen-specs/$spec.json" --backend cuda --db "$W/regen.sqlite" >> "$W/regen.log" 2>&1
  echo "  rc=$? $(tail -n 1 "$W/regen.log")" >> "$W/times.txt"
done
python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT status, mma, splits_used, count(*) FROM cases GROUP BY 1, 2, 3').fetchall())" \
  "$W/regen.sqlite" > "$W/regen-summary.txt" 2>&1

# device_run.sh takes its plugins from $BUILD/plugins: a build folder of the new policy's plugins.
mkdir -p build-nonempty
ln -sfn ../build-carry/bin build-nonempty/bin
ln -sfn ../build-carry/plugins-nonempty build-nonempty/plugins
date -u +"peers %T" >> "$W/times.txt"
OUT=$W/peers BUILD=build-nonempty PEERS_SHAPES="1,32768,32,8,128" PEERS_SECONDS=$(left) \
  bash backends/cuda/scripts/device_run.sh peers > "$W/peers.log" 2>&1
echo "peers rc=$?" >> "$W/times.txt"
date -u +"done %T" >> "$W/times.txt"
cat "$W/times.txt" "$W/regen-summary.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
