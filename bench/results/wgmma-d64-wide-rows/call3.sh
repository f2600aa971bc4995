#!/usr/bin/env bash
# Call 3 of bench/results/wgmma-d64-wide-rows/: from the repository root on the H200, with
# build-carry/ holding bin/tilepath and the plugins of 21fbba6 (the bundled kernels): the
# sanitize step of backends/cuda/scripts/device_run.sh on all its cases, both kernel families
# (memcheck, racecheck, synccheck, initcheck). Its log comes back in $OUT/sanitizer.txt.
set -u
OUT=${OUT:-out}
OUT=$OUT/san BUILD=build-carry bash backends/cuda/scripts/device_run.sh sanitize > "$OUT/sanitize-step.log" 2>&1
echo "sanitize rc=$?"
tar -xzf "$OUT/san/logs.tar.gz" -C "$OUT" logs/sanitizer.txt && mv "$OUT/logs/sanitizer.txt" "$OUT/sanitizer.txt"
tail -n 3 "$OUT/sanitizer.txt"
