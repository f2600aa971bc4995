#!/usr/bin/env bash
# The ncu step of call1.sh again, alone: in call 1 the sanitize step's logs.tar.gz replaced the
# ncu step's, which held its CSVs (call1.sh now gives the sanitize step a folder of its own).
#   OUT=$OUT bash bench/results/ncu/call2.sh
set -u
W=$OUT/work
mkdir -p "$W"
export BUILD=build-carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >"$W/smi.txt" 2>&1
OUT=$W bash backends/cuda/scripts/device_run.sh ncu >"$W/ncu.log" 2>&1
echo "ncu rc=$? at $SECONDS s"
tail -n 2 "$W/ncu.log"
