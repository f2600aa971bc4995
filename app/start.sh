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
"$bin/tilepath" report --db "$db" --format md | head -n 20
if [ -f data/h200-sweep.sqlite ]; then
  echo
  echo "== bundled H200 database (first rows) =="
  "$bin/tilepath" report --db data/h200-sweep.sqlite --format md | head -n 15
fi
if [ -x "$bin/tilepath-gui" ]; then
  QT_QPA_PLATFORM=offscreen "$bin/tilepath-gui" --open "${TILEPATH_DB:-$db}" --view graph --screenshot out/graph.png &&
    echo "GUI screenshot: out/graph.png"
fi
