#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the Qt-free CUDA build
# (README.md, "On a GPU server"): build-device/bin, build-device/plugins and
# build-device/gpu-tests, built there or copied from a build machine (BUILD=DIR
# names another build folder).
#
# Usage: backends/cuda/scripts/device_run.sh STEP...
#   sanity  nvidia-smi, ldd of the binaries, `tilepath backends`,
#           cuobjdump resource usage and an opcode summary of the plugin's SASS
#   tests   the GPU tests (gtest XML + log)
#   sweep   data/sweeps/h200-cuda.json through the CLI into $OUT/h200-sweep.sqlite
#   ncu     Nsight Compute (--clock-control none, CSV of the raw page) on the main kernel
#           of one case of every kernel family (mma.sync and wgmma, plain and prebias K;
#           NCU_MATCH picks some) at B=64, S=4096, cold: DRAM bytes, L2 hit
#           rate, achieved occupancy, stalls per reason, shared-memory bank conflicts,
#           instructions per pipe; each CSV is kept in logs and attached
#           (`tilepath attach --ncu-csv`) to the matching case of the sweep database
#   ncu-attach  the CSVs of an earlier ncu step (NCU_DIR) attached to the cases of SWEEP_DB;
#           needs no GPU; fails when a CSV does not attach
#   peers   bench/peers.py (issues 5 and 18), if present; with BUILD/bin/paged_read_bound
#           (bench/paged_read_bound.cu, which this script does not build: build it on the build
#           machine, from the repository root, into the build folder that is carried here:
#             nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. \
#               -o build-device/bin/paged_read_bound bench/paged_read_bound.cu \
#               backends/cuda/read_bandwidth.cu backends/cuda/event_timer.cpp backends/cuda/l2_flush.cpp)
#           every row it compiles in also gets the paged read of its bytes with no attention
#           math (split read + merge, at the fastest of the shape's compiled split counts)
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck and initcheck on one small
#           case of every kernel family (split-KV + combine, two kv heads per CTA,
#           separate_kv, ragged lengths, D=64/256); each tool's summary line per case
#   prebias bench/prebias-vs-plain.json (prebias beside plain on the same keys, cold) into
#           $OUT/prebias-vs-plain.sqlite, then data/sweeps/h200-prebias.json (post-RoPE
#           prebias K8/V8 on Qwen-like keys, the cases merged into the bundled database)
#           into $OUT/h200-prebias.sqlite; a CSV report of each in logs
#   mma-stalls  ncu's CSV of K8/V8 fp8_qk/k_only on mma.sync and on wgmma at one shape
#           (STALLS_SHAPE="B S", default "16 32768"), cold: where the time goes in each
#   breakdown  per-kernel GPU durations (ncu gpu__time_duration, kernels serialised) of
#           whole decode steps at the split-KV shapes and B=64, S=4096 (the K8/V8
#           variant bench/results/h200-peers.json times at each), next to the
#           event-timed step: how much of a step is the main kernel, the combine and
#           the gaps between launches
# Environment:
#   OUT            where results go (default ./out)
#   SWEEP_DB       the sweep database the steps write and attach to (default $OUT/h200-sweep.sqlite)
#   SWEEP_SECONDS  the sweep gets SIGINT after this long and stops cleanly
#                  between cases, committing what it finished (default 420)
#   SWEEP_RESUME   a database from an earlier call to continue (the sweep skips
#                  the cases it already holds)
#   SWEEP_SPEC     spec(s) to run, space separated, in order into one database (default
#                  data/sweeps/h200-cuda.json; README.md, "The bundled database", lists the
#                  specs of data/h200-sweep.sqlite)
#   PEERS_SECONDS  limit for bench/peers.py (default 540: 180 s was the limit for 5 rows of 9
#                  tilepath processes; the 11 rows of 12 take about three times as many). The rows
#                  already done are kept when it runs out
#   PEERS_SHAPES   the rows of bench/peers.py to run, as its --shapes takes them (space-separated
#                  B,S,Hq,Hk,D; default: all), to split the list over calls
#   PREBIAS_BENCH_SECONDS, PREBIAS_SECONDS  limits of the prebias step's two sweeps (200, 300;
#                  a limit of 0 skips that sweep)
#   PREBIAS_RESUME a prebias database from an earlier call to continue
#   NCU_MATCH      only the ncu families ("KV K_PATH MODE") matching this extended regex (default: all)
#   SANITIZE_MATCH only the sanitize cases whose flags match this extended regex (default: all)
# Everything small goes into $OUT/logs.tar.gz; the database comes back as a file.
set -u -o pipefail

ROOT=$(pwd)
OUT=${OUT:-$ROOT/out}
BUILD=${BUILD:-build-device}
LOGS=$OUT/logs
mkdir -p "$LOGS"
export TILEPATH_PLUGIN_PATH=$ROOT/$BUILD/plugins
export TILEPATH_MODELS_DIR=$ROOT/models
export PATH=$PATH:/usr/local/cuda/bin
TILEPATH=$ROOT/$BUILD/bin/tilepath
PLUGIN=$ROOT/$BUILD/plugins/libtilepath_backend_cuda.so
GPU_TESTS=$ROOT/$BUILD/gpu-tests/cuda_gpu_tests
DB=${SWEEP_DB:-$OUT/h200-sweep.sqlite}
status=0

step() { echo "== $* ($(date -u +%H:%M:%S))"; }

run_sanity() {
  step sanity
  {
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu --format=csv
    uname -a
    for f in "$TILEPATH" "$PLUGIN" "$GPU_TESTS"; do echo "-- ldd $f"; ldd "$f"; done
    "$TILEPATH" backends
  } >"$LOGS/sanity.txt" 2>&1
  tail -n 4 "$LOGS/sanity.txt"
  if command -v cuobjdump >/dev/null; then
    cuobjdump --dump-resource-usage "$PLUGIN" >"$LOGS/resource-usage.txt" 2>&1
    cuobjdump --dump-sass "$PLUGIN" >"$OUT/sass.txt" 2>&1
    # Per kernel: how many of the opcodes that matter for the tile path.
    awk '/Function :/ {fn=$3}
         /^[[:space:]]+\/\*[0-9a-f]+\*\// {for (i=1;i<=NF;i++) if ($i ~ /^(HGMMA|QGMMA|HMMA|F2FP|F2F|I2F|PRMT|LDGSTS|UTMALDG|LDG|LDS|LDSM|STS|SHFL|MUFU|BAR|SYNCS|LDL|STL)/) {split($i,a,"."); c[fn" "a[1]]++; break}}
         END {for (k in c) print k, c[k]}' "$OUT/sass.txt" | sort >"$LOGS/sass-opcode-counts.txt"
    gzip -f "$OUT/sass.txt"
    # Cross-check of the plugin's own cubin hashing (kernel.json's cubin_sha256):
    # the cubins as cuobjdump extracts them.
    (mkdir -p /tmp/cubins && cd /tmp/cubins && cuobjdump -xelf all "$PLUGIN" >/dev/null && sha256sum *.cubin) \
      >"$LOGS/cubin-sha256.txt" 2>&1
    cat "$LOGS/cubin-sha256.txt"
    echo "sass: $(wc -l <"$LOGS/sass-opcode-counts.txt") (kernel, opcode) rows; $(du -h "$OUT/sass.txt.gz" | cut -f1) gzip"
  fi
}

run_tests() {
  step gpu tests
  "$GPU_TESTS" --gtest_output=xml:"$LOGS/gpu-tests.xml" >"$LOGS/gpu-tests.log" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$LOGS/gpu-tests.log" | head -n 60
  tail -n 3 "$LOGS/gpu-tests.log"
}

run_sweep() {
  step sweep
  if [ -n "${SWEEP_RESUME:-}" ] && [ -f "$SWEEP_RESUME" ]; then cp "$SWEEP_RESUME" "$DB"; fi
  # The specs in order into one database (a case already there is skipped), sharing the
  # time limit: each gets what the ones before it left.
  local deadline=$(($(date +%s) + ${SWEEP_SECONDS:-420})) spec left
  for spec in ${SWEEP_SPEC:-data/sweeps/h200-cuda.json}; do
    left=$((deadline - $(date +%s)))
    if [ "$left" -le 5 ]; then echo "sweep: no time left for $spec"; break; fi
    timeout --signal=INT --kill-after=60 "$left" \
      "$TILEPATH" sweep "$spec" --backend cuda --db "$DB" >>"$LOGS/sweep.log" 2>&1
    echo "sweep $spec exit $?"
    tail -n 2 "$LOGS/sweep.log"
  done
  # One self-contained file (no -wal/-shm beside it) to bring back.
  python3 - "$DB" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
c.execute("PRAGMA journal_mode=DELETE")
print("cases by status:", c.execute("SELECT status, COUNT(*) FROM cases GROUP BY status").fetchall())
c.close()
PY
  "$TILEPATH" report --db "$DB" --format csv >"$LOGS/report.csv" 2>&1
  ls -la "$DB"
}

# The metrics core/perf/ncu_csv.cpp reads (ncu_csv_metric_list(); tests/core/test_ncu_csv.cpp
# checks that this line says the same).
NCU_CSV_METRICS='dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__inst_executed_pipe_.*\.sum'

# The main kernels of both matrix instruction families (core/perf/ncu_csv.h, ncu_main_kernel_filter).
NCU_MAIN_KERNELS='decode_attention_kernel|decode_wgmma_kernel'

# The kernel families the ncu step profiles: dtype, K path, mode, then the extra flags of the
# wgmma families and of prebias K (on the Qwen-like keys its bundled cases ran on).
NCU_FAMILIES=(
  "k16v16 k16 none" "k16v8 k16 full" "k16v8 k16 separate_kv" "k8v16 transform full"
  "k8v16 transform separate_kv" "k8v16 fp8_qk none" "k8v8 transform full" "k8v8 transform k_only"
  "k8v8 transform separate_kv" "k8v8 fp8_qk full" "k8v8 fp8_qk k_only" "k8v8 fp8_qk separate_kv"
  "k16v16 k16 none --mma wgmma" "k16v8 k16 full --mma wgmma" "k8v16 transform full --mma wgmma"
  "k8v16 fp8_qk none --mma wgmma" "k8v8 transform full --mma wgmma" "k8v8 transform k_only --mma wgmma"
  "k8v8 fp8_qk full --mma wgmma" "k8v8 fp8_qk k_only --mma wgmma"
  "k8v8 transform full --k-repr prebias --keys qwen_bias" "k8v8 transform k_only --k-repr prebias --keys qwen_bias"
  "k8v8 fp8_qk full --k-repr prebias --keys qwen_bias" "k8v8 fp8_qk k_only --k-repr prebias --keys qwen_bias"
)

# For one NCU_FAMILIES entry: the name of its CSV (NCU_REPORT), the operating point's flags
# (NCU_OP), the flags that run it (NCU_RUN) and those that find its case in a database
# (NCU_ATTACH: every extra flag but the input distribution).
ncu_family() {
  set -- $1
  local kv=$1 path=$2 mode=$3 suffix=""
  shift 3
  NCU_RUN=("$@")
  NCU_ATTACH=()
  case " $* " in *" wgmma "*) suffix=-wgmma ;; *" prebias "*) suffix=-prebias ;; esac
  while [ $# -gt 0 ]; do
    if [ "$1" = --keys ]; then shift 2; else NCU_ATTACH+=("$1"); shift; fi
  done
  NCU_REPORT=ncu-$kv-$path-$mode$suffix.csv
  NCU_LABEL=$kv/$path/$mode$suffix
  NCU_OP=(--kv "$kv" --k-path "$path" --mode "$mode" --batch 64 --context 4096 --q-heads 32 --kv-heads 8
          --head-dim 128 --page-size 16 --cache hbm_cold)
}

# Attaches one family's CSV to its case of $DB, when there is a database; fails when the
# attach does.
attach_ncu_report() {
  local report=$1
  if [ -f "$DB" ]; then
    if ! "$TILEPATH" attach --db "$DB" --ncu-csv --file "$report" --mime text/csv --backend cuda "${NCU_OP[@]}" \
      "${NCU_ATTACH[@]}" 2>&1 | tee -a "$LOGS/attach.log"; then
      echo "attach of $report failed (the report stays in logs)"
      return 1
    fi
  else
    echo "no sweep database at $DB: $report stays in logs only"
  fi
}

run_ncu() {
  step ncu
  if ! command -v ncu >/dev/null; then echo "no ncu"; return; fi
  # One case of every kernel family (dtype x path x mode, on both matrix instruction families,
  # plain and prebias K) at B=64, S=4096, cold: ncu's CSV (the raw page, base units) of the
  # main kernel, attached with its numbers (`tilepath attach --ncu-csv`) to the matching case
  # of the sweep database. NCU_MATCH (an extended regex) picks families by their line above.
  for v in "${NCU_FAMILIES[@]}"; do
    if [ -n "${NCU_MATCH:-}" ] && ! echo "$v" | grep -qE -- "$NCU_MATCH"; then continue; fi
    ncu_family "$v"
    local report="$LOGS/$NCU_REPORT"
    timeout 180 ncu --clock-control none --csv --page raw --print-units base --metrics "$NCU_CSV_METRICS" \
        --kernel-name "regex:$NCU_MAIN_KERNELS" --launch-count 1 \
        "$TILEPATH" run --backend cuda --db /tmp/ncu.sqlite "${NCU_OP[@]}" "${NCU_RUN[@]}" --repeats 1 --warmup 0 \
        --no-ablations >"$report" 2>&1
    echo "ncu $NCU_LABEL: $(grep -c '^"[0-9]' "$report") launch row(s) ($(date -u +%H:%M:%S))"
    # A profile whose case is not in the database stays in logs; the step goes on.
    attach_ncu_report "$report" || true
  done
}

# The ncu step's CSVs from another call (NCU_DIR, named as the ncu step names them) attached to
# the cases of $DB; needs no GPU, so a call's CSVs can be attached on the build machine to a
# database that did not travel with the call.
run_ncu_attach() {
  step ncu-attach
  if [ ! -f "$DB" ]; then echo "no database at $DB"; status=1; return; fi
  local dir=${NCU_DIR:?NCU_DIR names the folder of the ncu CSVs}
  for v in "${NCU_FAMILIES[@]}"; do
    if [ -n "${NCU_MATCH:-}" ] && ! echo "$v" | grep -qE -- "$NCU_MATCH"; then continue; fi
    ncu_family "$v"
    if [ -f "$dir/$NCU_REPORT" ]; then
      attach_ncu_report "$dir/$NCU_REPORT" || status=1
    else
      echo "no $dir/$NCU_REPORT"
    fi
  done
}

run_peers() {
  step peers
  if [ -f bench/peers.py ]; then
    local extra=()
    local bound=$ROOT/$BUILD/bin/paged_read_bound
    if [ -x "$bound" ]; then extra+=(--paged-read-bound "$bound"); else echo "no $bound: paged_bound_us will be null"; fi
    # shellcheck disable=SC2206
    [ -n "${PEERS_SHAPES:-}" ] && extra+=(--shapes $PEERS_SHAPES)
    PYTHONUNBUFFERED=1 timeout "${PEERS_SECONDS:-540}" python3 bench/peers.py --tilepath "$TILEPATH" \
      --out "$OUT/h200-peers.json" "${extra[@]}" >"$LOGS/peers.log" 2>&1 || status=1
    tail -n 20 "$LOGS/peers.log"
  fi
}

# Small cases (the tools slow kernels 10-100x) that together reach every kernel family
# and the code paths only some shapes take: split-KV with its combine (B=1, 32 splits),
# two kv heads per CTA (4096 tokens per CTA: --splits 1), ragged lengths with tails
# inside a page, the converter warps and mbarriers of separate_kv, K16/V8, K16/V16 with
# splits, and the D=64/256 instantiations; then the wgmma kernels (--mma wgmma: split with
# its combine, two kv heads per CTA at D=64 on a split grid and unsplit with ragged lengths,
# ragged at D=256, the 16-bit caches; then the cp.async ring at 1- and 4-token pages: split
# with ragged lengths, two kv heads at D = 64, K8/V16); SANITIZE_MATCH=wgmma runs those alone,
# SANITIZE_MATCH='page-size' the cp.async ring's.
SANITIZE_CASES=(
  "--kv k8v8 --k-path fp8_qk --mode k_only --batch 1 --context 8192 --head-dim 128"
  "--kv k8v8 --k-path fp8_qk --mode k_only --batch 2 --context 4096 --splits 1 --head-dim 128"
  "--kv k8v8 --k-path transform --mode full --batch 3 --context 5000 --context-lengths 100,5000,33 --head-dim 128"
  "--kv k8v16 --k-path transform --mode separate_kv --batch 2 --context 2048 --head-dim 128"
  "--kv k16v8 --batch 2 --context 2048 --head-dim 128"
  "--kv k16v16 --k-path k16 --mode none --batch 2 --context 4096 --head-dim 128"
  "--kv k8v8 --k-path fp8_qk --mode k_only --batch 2 --context 2048 --head-dim 64"
  "--kv k8v8 --k-path transform --mode full --batch 2 --context 2048 --head-dim 256"
  "--kv k8v8 --k-path transform --mode k_only --k-repr prebias --keys qwen_bias --batch 2 --context 4096 --head-dim 128"
  "--kv k8v8 --k-path fp8_qk --mode full --k-repr prebias --keys qwen_bias --batch 1 --context 8192 --head-dim 128"
  "--kv k8v8 --k-path fp8_qk --mode k_only --batch 1 --context 8192 --head-dim 128 --mma wgmma"
  "--kv k8v8 --k-path transform --mode full --batch 1 --context 8192 --head-dim 64 --mma wgmma"
  "--kv k8v8 --k-path fp8_qk --mode k_only --batch 3 --context 5000 --context-lengths 100,5000,33 --head-dim 64 --mma wgmma"
  "--kv k8v8 --k-path fp8_qk --mode full --batch 3 --context 5000 --context-lengths 100,5000,33 --head-dim 256 --mma wgmma"
  "--kv k16v16 --k-path k16 --mode none --batch 2 --context 4096 --head-dim 128 --mma wgmma"
  "--kv k8v16 --k-path fp8_qk --mode none --batch 2 --context 2048 --head-dim 128 --mma wgmma"
  "--kv k8v8 --k-path fp8_qk --mode k_only --batch 3 --context 5000 --context-lengths 100,5000,33 --splits 3 --head-dim 128 --mma wgmma --page-size 1"
  "--kv k8v8 --k-path transform --mode full --batch 2 --context 2048 --head-dim 64 --mma wgmma --page-size 1"
  "--kv k8v16 --k-path transform --mode full --batch 2 --context 2048 --head-dim 128 --mma wgmma --page-size 4"
)

run_sanitize() {
  step compute-sanitizer
  if ! command -v compute-sanitizer >/dev/null; then echo "no compute-sanitizer"; return; fi
  local log="$LOGS/sanitizer.txt" i=0 runs=0 clean=0
  : >"$log"
  compute-sanitizer --version | tail -n 1 >>"$log"
  for c in "${SANITIZE_CASES[@]}"; do
    i=$((i + 1))
    if [ -n "${SANITIZE_MATCH:-}" ] && ! echo "$c" | grep -qE -- "$SANITIZE_MATCH"; then continue; fi
    for tool in memcheck racecheck synccheck initcheck; do
      # initcheck leaves out the read kernel (the 2 GB bandwidth reads, the L2 flush, the
      # stream over the case's bytes: buffers it fills itself), which only slows the run.
      local filter=()
      [ "$tool" = initcheck ] && filter=(--kernel-name-exclude kns=stream_read_kernel)
      echo "== case $i $tool: $c" >>"$log"
      local rc
      sanitize_one "$log" "$tool" "$c" "${filter[@]}"
      rc=$?
      [ $rc -ne 0 ] && status=1
      local summary
      summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|nrecognized|nknown option' "$log" | tail -n 1)
      echo "case $i $tool rc=$rc: $summary"
      runs=$((runs + 1))
      if [ $rc -eq 0 ] && echo "$summary" | grep -qE ' 0 (errors|hazards)'; then clean=$((clean + 1)); fi
    done
  done
  echo "sanitizer: $clean of $runs runs exited 0 with 0 errors/hazards" | tee -a "$log"
}

# One tool on one case, appending to LOG: sanitize_one LOG TOOL "CASE FLAGS" [TOOL OPTIONS...]
# (16-token pages unless the case names its page size).
sanitize_one() {
  local log=$1 tool=$2 c=$3 page=(--page-size 16)
  shift 3
  case "$c" in *--page-size*) page=() ;; esac
  # shellcheck disable=SC2086
  timeout 120 compute-sanitizer --tool "$tool" "$@" --error-exitcode 3 \
    "$TILEPATH" run --backend cuda --db /tmp/sanitize.sqlite $c --q-heads 32 --kv-heads 8 "${page[@]}" \
    --repeats 1 --warmup 0 --no-ablations >>"$log" 2>&1
}

# One sweep into its own database, stopped cleanly after $2 seconds, left self-contained.
sweep_into() {
  local spec=$1 seconds=$2 db=$3 name
  name=$(basename "$db" .sqlite)
  timeout --signal=INT --kill-after=60 "$seconds" "$TILEPATH" sweep "$spec" --backend cuda --db "$db" \
    >"$LOGS/$name.log" 2>&1
  echo "$name: sweep exit $?"
  tail -n 3 "$LOGS/$name.log"
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE'); print('cases by status:', c.execute('SELECT status, COUNT(*) FROM cases GROUP BY status').fetchall())" "$db"
  "$TILEPATH" report --db "$db" --format csv >"$LOGS/$name.csv" 2>&1
}

run_prebias() {
  step prebias
  [ "${PREBIAS_BENCH_SECONDS:-200}" -gt 0 ] &&
    sweep_into bench/prebias-vs-plain.json "${PREBIAS_BENCH_SECONDS:-200}" "$OUT/prebias-vs-plain.sqlite"
  if [ -n "${PREBIAS_RESUME:-}" ] && [ -f "$PREBIAS_RESUME" ]; then cp "$PREBIAS_RESUME" "$OUT/h200-prebias.sqlite"; fi
  [ "${PREBIAS_SECONDS:-300}" -gt 0 ] &&
    sweep_into data/sweeps/h200-prebias.json "${PREBIAS_SECONDS:-300}" "$OUT/h200-prebias.sqlite"
}

# The K8/V8 variant the peers file times at B, S (Hq/Hk 32/8, D=128) as tilepath run flags;
# K8/V8 fp8_qk k_only on wgmma where the file has no such row.
peers_variant_flags() {
  python3 - "$1" "$2" <<'PY'
import json, sys
b, s = int(sys.argv[1]), int(sys.argv[2])
variant = "k8v8/fp8_qk/k_only/wgmma"
try:
    for r in json.load(open("bench/results/h200-peers.json")):
        if (r.get("batch"), r.get("context"), r.get("q_heads", 32), r.get("kv_heads", 8), r.get("head_dim", 128)) == (b, s, 32, 8, 128):
            variant = r.get("variant") or variant
            break
except OSError:
    pass
kv, path, mode, *mma = variant.split("/")
print(f"--kv {kv} --k-path {path} --mode {mode} --mma {mma[0] if mma else 'mma_sync'}")
PY
}

run_breakdown() {
  step breakdown
  if ! command -v ncu >/dev/null; then echo "no ncu"; return; fi
  local shapes=("1 32768" "4 65536" "16 32768" "64 4096")
  for sh in "${shapes[@]}"; do
    set -- $sh
    local csv="$LOGS/breakdown-b$1-s$2.csv"
    # shellcheck disable=SC2207
    local variant=($(peers_variant_flags "$1" "$2"))
    local op=("${variant[@]}" --batch "$1" --context "$2" --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 16)
    # The event-timed step first, without the profiler.
    "$TILEPATH" run --backend cuda --db /tmp/breakdown.sqlite "${op[@]}" --no-ablations 2>&1 |
      tee "$LOGS/breakdown-b$1-s$2-event.txt" | grep -E "latency|stream" | head -n 3
    # The decode, combine and read kernels of the process (the read kernel also does the
    # bandwidth reads over 2 GB, the CLI's L2 flush and the stream over the case's bytes)
    # with their durations; --cache-control none leaves the CLI's own flush the only one.
    timeout 150 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --page raw \
      --kernel-name "regex:$NCU_MAIN_KERNELS|combine_kernel|stream_read_kernel" \
      "$TILEPATH" run --backend cuda --db /tmp/breakdown.sqlite "${op[@]}" --repeats 5 --warmup 1 --no-ablations \
      >"$csv" 2>&1
    # Kernel by kernel: ncu serialises them (no PDL overlap) and times each on the GPU alone.
    python3 bench/ncu_durations.py "$csv" --label "B=$1 S=$2 (${variant[*]})" \
      --compact "$LOGS/breakdown-b$1-s$2-durations.csv"
  done
}

# The same K8/V8 variant on both matrix instruction families at one shape (default B=16,
# S=32768, cold: where wgmma is furthest behind mma.sync), ncu's CSV of each main kernel:
# stalls per reason, instructions per pipe, DRAM bytes, L2 hit rate, occupancy.
run_mma_stalls() {
  step mma-stalls
  if ! command -v ncu >/dev/null; then echo "no ncu"; return; fi
  local shape=${STALLS_SHAPE:-"16 32768"}
  set -- $shape
  for mma in mma_sync wgmma; do
    local report="$LOGS/stalls-k8v8-fp8_qk-k_only-$mma-b$1-s$2.csv"
    local op=(--kv k8v8 --k-path fp8_qk --mode k_only --mma "$mma" --batch "$1" --context "$2" --q-heads 32
              --kv-heads 8 --head-dim 128 --page-size 16 --cache hbm_cold)
    timeout 180 ncu --clock-control none --csv --page raw --print-units base --metrics "$NCU_CSV_METRICS" \
        --kernel-name regex:'decode_attention_kernel|decode_wgmma_kernel' --launch-count 1 \
        "$TILEPATH" run --backend cuda --db /tmp/stalls.sqlite "${op[@]}" --repeats 1 --warmup 0 --no-ablations \
        >"$report" 2>&1
    echo "ncu $mma B=$1 S=$2: $(grep -c '^"[0-9]' "$report") launch row(s)"
  done
}

for s in "$@"; do
  case "$s" in
    mma-stalls) run_mma_stalls ;;
    sanity) run_sanity ;;
    tests) run_tests ;;
    sweep) run_sweep ;;
    ncu) run_ncu ;;
    ncu-attach) run_ncu_attach ;;
    peers) run_peers ;;
    sanitize) run_sanitize ;;
    breakdown) run_breakdown ;;
    prebias) run_prebias ;;
    *) echo "unknown step $s (sanity, tests, sweep, ncu, ncu-attach, peers, sanitize, breakdown, prebias, mma-stalls)"; status=2 ;;
  esac
done
tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs && rm -rf "$LOGS"
exit $status
