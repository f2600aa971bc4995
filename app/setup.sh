#!/usr/bin/env bash
# Installs tilepath's build dependencies (Debian 12 / Ubuntu 24.04), then
# configures and builds into ./build. Usage: bash app/setup.sh [--no-gui] [--no-cuda] [--no-hip]
# The HIP backend (gfx942) builds with Debian's clang-19 and the HIP headers and runtime of
# libamdhip64-dev; without an AMD GPU it loads and reports zero devices (backends/hip/README.md).
# Safe to rerun: apt-get is skipped when everything is present.
#
# TILEPATH_WERROR=ON in the environment (.ci/run sets it) configures with
# -DTILEPATH_WERROR=ON: any compiler warning fails the build. Without it (the README's
# commands as a user runs them) warnings are printed and the build goes on, since a
# newer compiler than CI's (GCC 12 on Debian 12) may warn where CI's does not.
set -euo pipefail
cd "$(dirname "$0")/.."

gui=ON
cuda=AUTO
hip=ON
fuzz=OFF
slurm=OFF
for arg in "$@"; do
  case "$arg" in
    --no-gui) gui=OFF ;;
    --no-cuda) cuda=OFF ;;
    --no-hip) hip=OFF ;;
    --with-fuzz) fuzz=ON ;;
    --with-slurm) slurm=ON ;;
    *) echo "setup.sh: unknown option '$arg' (allowed: --no-gui, --no-cuda, --no-hip, --with-fuzz, --with-slurm)" >&2; exit 2 ;;
  esac
done
case "${TILEPATH_WERROR:-OFF}" in
  ON | on | 1 | TRUE | true | YES | yes) werror=ON ;;
  OFF | off | 0 | FALSE | false | NO | no) werror=OFF ;;
  *) echo "setup.sh: TILEPATH_WERROR='${TILEPATH_WERROR}' (allowed: ON, OFF)" >&2; exit 2 ;;
esac

packages=(build-essential cmake ninja-build git pkg-config libsqlite3-dev libboost-graph-dev nlohmann-json3-dev
          libcli11-dev libgtest-dev libgmock-dev clang-format-14)
# clang-format-14: app/test.sh's format check (pinned: other versions format some code differently).
# clang-19 + lld-19 (the gfx942 device link) + llvm-19 (llvm-objdump-19 for the ISA test)
# + clang-tools-19 (clang-offload-bundler, which clang runs to bundle the device code)
# + libamdhip64-dev: the HIP backend.
if [ "$hip" = ON ]; then
  packages+=(clang-19 lld-19 llvm-19 clang-tools-19 libamdhip64-dev)
fi
# --with-fuzz (app/test.sh): clang-14 and its libFuzzer runtime for the fuzz job's build-fuzz/.
if [ "$fuzz" = ON ]; then
  packages+=(clang-14 libclang-rt-14-dev)
fi
# --with-slurm (app/test.sh): a single-node Slurm for tests/slurm/job_array_test.sh.
if [ "$slurm" = ON ]; then
  packages+=(slurm-wlm munge)
fi
# xvfb + xauth (xvfb-run): tests/gui/smoke_xvfb.py runs the real tilepath-gui on an X server.
if [ "$gui" = ON ]; then
  packages+=(qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev xvfb xauth)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "setup.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup.sh: missing packages. Run as root:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

cmake_args=(-S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEPATH_WITH_GUI="$gui" -DTILEPATH_WERROR="$werror")
if [ "$cuda" = OFF ]; then cmake_args+=(-DTILEPATH_WITH_CUDA=OFF); fi
if [ "$hip" = OFF ]; then cmake_args+=(-DTILEPATH_WITH_HIP=OFF); fi
cmake "${cmake_args[@]}" >build-configure.log 2>&1 || { cat build-configure.log >&2; exit 1; }
rm -f build-configure.log
cmake --build build -j"${TILEPATH_JOBS:-2}"
