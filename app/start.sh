#!/usr/bin/env bash
# Sets everything up and starts tilepath on the embedded default (cpu + sim
# backends, bundled H200 database). With a display: the GUI. Without one
# (no DISPLAY/WAYLAND_DISPLAY, or QT_QPA_PLATFORM=offscreen): a CLI demo that
# predicts, runs a small CPU sweep and reports, then renders a GUI screenshot.
set -euo pipefail
cd "$(dirname "$0")/.."
bash app/setup.sh "$@"

bin=build/bin
has_display=0
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ "${QT_QPA_PLATFORM:-}" != offscreen ]; then has_display=1; fi

if [ "$has_display" = 1 ] && [ -x "$bin/tilepath-gui" ]; then
  exec "$bin/tilepath-gui"
fi

echo "== no display: tilepath CLI demo =="
"$bin/tilepath" backends
echo
"$bin/tilepath" predict --gpu h200 --batch 64 --context 4096 --kv k8v8
echo
"$bin/tilepath" predict --gpu h200 --batch 64 --context 4096 --kv k16v8
mkdir -p out
db=out/demo.sqlite
echo
echo "== a CPU sweep into $db (rerun resumes; Ctrl-C is safe) =="
"$bin/tilepath" sweep data/sweeps/cpu-demo.json --backend cpu --db "$db"
# Reports go to files (a pipe into head would end the report with SIGPIPE).
"$bin/tilepath" report --db "$db" --format md >out/demo-report.md
echo "report of the CPU sweep: out/demo-report.md ($(($(wc -l <out/demo-report.md) - 2)) cases)"
if [ -f data/h200-sweep.sqlite ]; then
  "$bin/tilepath" report --db data/h200-sweep.sqlite --format csv >out/h200-report.csv
  echo "report of the bundled H200 sweep: out/h200-report.csv ($(($(wc -l <out/h200-report.csv) - 1)) cases)"
  echo
  echo "== measured on the H200: B=64 S=4096 Hq/Hk=32/8 D=128, HBM-cold =="
  # The database also holds the grid's other head dims, head counts and pages, and cases a kernel refused.
  "$bin/tilepath" report --db data/h200-sweep.sqlite --format csv --batch 64 --context 4096 --cache hbm_cold \
    --head-dim 128 --status ok |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
             $col["q_heads"] == 32 && $col["kv_heads"] == 8 && $col["page_size"] == 16 {
               # Without stage costs (the wgmma kernels), the ring alone against the measured interval.
               limit = $col["limiting_stage"]
               ring = $col["tile_interval_load_only_us"]; ii = $col["tile_interval_us"]
               if (limit == "" && ring != "" && ii > 0)
                 limit = sprintf("unknown (no stage costs; the ring alone is %.0f%% of the interval)", 100 * ring / ii)
               if (limit == "") limit = "unknown (no stage costs)"
               printf "%-7s %-9s %-12s %-8s %-8s %8.1f us  %5.1f%% of floor  limited by %s\n", $col["kv"],
                      $col["k_path"], $col["mode"], $col["mma"], $col["k_repr"], $col["latency_us"],
                      100 * $col["floor_fraction"], limit }'
fi
if [ -x "$bin/tilepath-gui" ]; then
  # Without --open the GUI starts as it would on a desktop: on the user's copy of the bundled H200 sweep.
  QT_QPA_PLATFORM=offscreen "$bin/tilepath-gui" ${TILEPATH_DB:+--open "$TILEPATH_DB"} --view graph \
    --screenshot out/graph.png && echo "GUI screenshot of the stage graph: out/graph.png"
fi
