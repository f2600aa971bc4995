#!/usr/bin/env bash
# Call 1 of bench/results/wgmma-ring-depth/: from the repository root on the H200, with the
# build of the bundled kernels in build-carry/ and the CUDA plugin with 5-slot rings in
# build-carry/ab-ring5/: the A/B of bench/wgmma-ring-depth.json in two rounds (the builds
# alternating), then the paged bounds of the B = 1 and 8/1 shapes. Everything comes back in
# $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W/ab" arm-old arm-ring5
export TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
cp build-carry/plugins/*.so arm-old/
cp build-carry/plugins/libtilepath_backend_cpu.so build-carry/plugins/libtilepath_backend_sim.so arm-ring5/
cp build-carry/ab-ring5/libtilepath_backend_cuda.so arm-ring5/
for round in 1 2; do
  arms="ring5 old"; [ $round = 2 ] && arms="old ring5"
  for arm in $arms; do
    date -u +"$arm round $round %T" >> "$W/times.txt"
    TILEPATH_PLUGIN_PATH=$PWD/arm-$arm build-carry/bin/tilepath sweep bench/wgmma-ring-depth.json --backend cuda \
      --db "$W/ab/$arm-round$round.sqlite" > "$W/sweep-$arm-$round.log" 2>&1
  done
done
export TILEPATH_PLUGIN_PATH=$PWD/arm-old
for sh in 1_32768_32_8 1_32768_8_1 32_32768_8_1 1_32768_16_2; do
  build-carry/bin/paged_read_bound 50 --shape "${sh//_/,}" > "$W/paged-bound-$sh.json" 2> "$W/paged-bound-$sh.err"
done
date -u +"done %T" >> "$W/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
