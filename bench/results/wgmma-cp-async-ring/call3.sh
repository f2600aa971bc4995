#!/usr/bin/env bash
# Call 3 of bench/results/wgmma-cp-async-ring/: is racecheck's report on the cp.async ring (call 1)
# a race or a protocol racecheck does not see? racecheck_probe.cu's three producer forms, each
# with both ways of freeing a slot (every lane arrives, or one lane for the warp after
# __syncwarp), each run plain (its sums checked) and under racecheck. From the repository root on
# the H200, with build-carry/bin/racecheck_probe built as racecheck_probe.cu's header says:
#   OUT=$OUT bash bench/results/wgmma-cp-async-ring/call3.sh
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
compute-sanitizer --version | tail -n 1 > "$OUT/probe.txt" 2>&1
for release in lanes elect; do
  for form in noinc lagged stores; do
    timeout 60 build-carry/bin/racecheck_probe "$form" "$release" >> "$OUT/probe.txt" 2>&1
    echo "$form $release plain rc=$?" >> "$OUT/probe.txt"
    log=$OUT/racecheck-$form-$release.log
    timeout 120 compute-sanitizer --tool racecheck build-carry/bin/racecheck_probe "$form" "$release" > "$log" 2>&1
    echo "$form $release racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$log" | tail -n 1)" >> "$OUT/probe.txt"
  done
done
cat "$OUT/probe.txt"
