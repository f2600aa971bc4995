#!/usr/bin/env bash
# Sets everything up and runs the test suite (what CI runs; docs/ci.md says more):
#   1. app/setup.sh: the dependencies, then configure and build build/ (with
#      TILEPATH_WERROR=ON in the environment, as .ci/run sets it, a warning fails the build);
#   2. the format check: every tracked C/C++/CUDA file against .clang-format, with
#      clang-format-14 (pinned, so that the result does not depend on the distribution);
#   3. ctest in build/. GPU tests (label `gpu`) skip with a message when no CUDA device
#      is present; the Slurm test (label `slurm`, tests/slurm/job_array_test.sh) starts a
#      single-node Slurm and skips with a message when not root; the GUI smoke test (label `gui`,
#      tests/gui/smoke_xvfb.py) walks every tab of the real tilepath-gui under xvfb-run and
#      skips with a message when xvfb-run or Xvfb is missing;
#   4. (with --sanitizers) the sanitizer job: build-sanitize/ (-DTILEPATH_SANITIZE=ON, AddressSanitizer with
#      LeakSanitizer + UndefinedBehaviorSanitizer, no GUI, no CUDA) builds the tests labelled
#      `sanitize` (core, analysis, store, numerics, backends, plugins, cli) with the CLI and plugins
#      they load or spawn, and runs them; any sanitizer report fails the job;
#   5. (with --sanitizers) the fuzz job: build-fuzz/ (clang-14, -DTILEPATH_FUZZ=ON: libFuzzer with AddressSanitizer
#      and UBSan) builds tests/fuzz's targets and runs each for TILEPATH_FUZZ_SECONDS (default
#      20) from its committed seeds; a crash, a sanitizer report or a timeout fails the job.
# Steps 4 and 5 build the core twice more (GCC Debug + ASan/UBSan, clang + libFuzzer) and
# take longer than 1-3 together on 2 cores, so CI (30 minutes on 2 cores) runs 1-3 and they
# run on request. A failed build stops at once; otherwise the steps all run and the script
# fails at the end if any of them failed.
# Usage: bash app/test.sh [--sanitizers] [--no-gui] [--no-cuda] (the last two passed to setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TILEPATH_JOBS:-2}
timings=()
failed=()
phase_start=$SECONDS
phase_done() {
  timings+=("$(printf '%-34s %5d s' "$1" $((SECONDS - phase_start)))")
  phase_start=$SECONDS
}

sanitizers=OFF
setup_args=(--with-slurm)
for arg in "$@"; do
  case "$arg" in
    --sanitizers) sanitizers=ON ;;
    *) setup_args+=("$arg") ;;
  esac
done
if [ "$sanitizers" = ON ]; then setup_args+=(--with-fuzz); fi

bash app/setup.sh "${setup_args[@]}"
phase_done "setup + build (build/)"

# ---- 2. formatting --------------------------------------------------------------
format_check() {
  if [ ! -e .git ]; then
    echo "format check: not a git checkout (no .git), skipped"
    return 0
  fi
  local list files=() bad=() out f
  list=$(git ls-files -- '*.c' '*.cpp' '*.h' '*.cu' '*.cuh') || {
    echo "format check: git ls-files failed" >&2
    return 1
  }
  while IFS= read -r f; do
    if [ -f "$f" ]; then files+=("$f"); fi
  done <<<"$list"
  if [ ${#files[@]} -eq 0 ]; then
    echo "format check: no C/C++/CUDA files tracked"
    return 0
  fi
  if out=$(printf '%s\0' "${files[@]}" | xargs -0 clang-format-14 --dry-run --Werror 2>&1); then
    echo "format check: all ${#files[@]} tracked C/C++/CUDA files are formatted as .clang-format says (clang-format-14)"
    return 0
  fi
  while IFS= read -r f; do
    if [ -n "$f" ]; then bad+=("$f"); fi
  done < <(printf '%s\n' "$out" | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
  if [ ${#bad[@]} -eq 0 ]; then
    printf '%s\n' "$out" >&2
    echo "format check: clang-format-14 failed (see above)" >&2
    return 1
  fi
  format_report=$(
    echo "format check FAILED: ${#bad[@]} file(s) not formatted as .clang-format says (clang-format-14):"
    printf '  %s\n' "${bad[@]}"
    echo "fix them with:"
    echo "  clang-format-14 -i$(printf ' %q' "${bad[@]}")"
    echo "(or every file: git ls-files -z -- '*.c' '*.cpp' '*.h' '*.cu' '*.cuh' | xargs -0 clang-format-14 -i)"
  )
  printf '%s\n' "$format_report" >&2
  return 1
}
format_report=""
format_check || failed+=("format check")
phase_done "format check"

# ---- 3. the tests in build/ -----------------------------------------------------
export QT_QPA_PLATFORM=offscreen
# Say up front which backends have devices here, and why the others have none.
build/bin/tilepath backends || true
if ! build/bin/tilepath backends --json 2>/dev/null | grep -q '"name": *"cuda"'; then
  echo "GPU tests: the cuda backend is not built here (no nvcc); label gpu has no tests"
elif ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "GPU tests: no CUDA device on this machine; tests labelled gpu will SKIP (see 'tilepath backends' above)"
fi
ctest --test-dir build --output-on-failure -j2 || failed+=("tests in build/")
phase_done "ctest (build/)"

# ---- 4. the sanitizer job -------------------------------------------------------
# Debug (-O0 -g, assertions on): a third of RelWithDebInfo's build time under the
# sanitizers, for little more test time (the cpu plugin keeps its own -O3). Not -Werror:
# GCC's warnings change under the instrumentation (at -O2 it reports false
# -Wmaybe-uninitialized in libstdc++ and Boost); build/ is the warning gate.
san=build-sanitize
sanitize_build() {
  mkdir -p "$san"
  cmake -S . -B "$san" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTILEPATH_WITH_GUI=OFF -DTILEPATH_WITH_CUDA=OFF \
    -DTILEPATH_SANITIZE=ON -DTILEPATH_WERROR=OFF >"$san/configure.log" 2>&1 || {
    cat "$san/configure.log" >&2
    return 1
  }
  cmake --build "$san" -j"$jobs" --target tilepath_sanitize_tests
}
# How a report fails the job, in the test executables and in the `tilepath` processes that
# the CLI tests spawn (they inherit this environment):
# - AddressSanitizer and LeakSanitizer write each process's report to
#   $reports/report.<executable>.<pid> (log_path); any such file fails the job, even where
#   a test only looks at a child's exit code;
# - UndefinedBehaviorSanitizer stops the process (halt_on_error, -fno-sanitize-recover) but,
#   with GCC's separate libubsan, ignores log_path and writes to stderr: in a test
#   executable ctest shows it; a child's stderr goes to a file under TMPDIR (tests/cli's
#   CliProcess), so TMPDIR is a folder of the job's own, searched for reports afterwards.
# LeakSanitizer is on; the plugins are dlopen'ed by the host, and no leak is reported from
# them today (docs/ci.md says what to do if one is).
sanitize_tests() {
  local reports=$PWD/$san/sanitizer-reports tmp=$PWD/$san/tmp rc=0 f found=()
  rm -rf "$reports" "$tmp"
  mkdir -p "$reports" "$tmp"
  local common="halt_on_error=1:print_stacktrace=1:log_path=$reports/report:log_exe_name=1"
  TMPDIR=$tmp \
    ASAN_OPTIONS="$common:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    UBSAN_OPTIONS="$common${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    ctest --test-dir "$san" -L sanitize --output-on-failure -j2 || rc=1
  for f in "$reports"/*; do
    if [ -s "$f" ]; then found+=("$f"); fi
  done
  while IFS= read -r f; do
    if [ -n "$f" ]; then found+=("$f"); fi
  done < <(grep -rlE '^[^ ]+:[0-9]+:[0-9]+: runtime error: |ERROR: (Address|Leak)Sanitizer' "$tmp" 2>/dev/null | sort)
  if [ ${#found[@]} -gt 0 ]; then
    echo "sanitizer job: reports in ${#found[@]} file(s) (one per process that reported):" >&2
    for f in "${found[@]}"; do
      echo "==== $f" >&2
      head -n 200 "$f" >&2
      if [ "$(wc -l <"$f")" -gt 200 ]; then echo "[... $(wc -l <"$f") lines in all]" >&2; fi
    done
    rc=1
  fi
  return $rc
}
if [ "$sanitizers" = OFF ]; then
  echo "sanitizer and fuzz jobs: not run (bash app/test.sh --sanitizers runs them; docs/ci.md)"
elif sanitize_build; then
  phase_done "sanitizer build ($san/)"
  sanitize_tests || failed+=("sanitizer job ($san/)")
  phase_done "sanitizer tests ($san/)"
else
  failed+=("sanitizer build ($san/)")
  phase_done "sanitizer build ($san/)"
fi

# ---- 5. the fuzz job ----------------------------------------------------------------
fuzz=build-fuzz
fuzz_targets=(sweep_spec op_flags db_inspect)
fuzz_build() {
  mkdir -p "$fuzz"
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEPATH_FUZZ=ON \
    -DTILEPATH_WITH_GUI=OFF -DTILEPATH_WITH_CUDA=OFF -DTILEPATH_WITH_HIP=OFF -DTILEPATH_BUILD_TESTS=OFF \
    >"$fuzz/configure.log" 2>&1 || {
    cat "$fuzz/configure.log" >&2
    return 1
  }
  cmake --build "$fuzz" -j"$jobs" --target fuzz_all
}
# New inputs go to $fuzz/corpus/<target> (the first folder); the committed seeds are read only.
fuzz_runs() {
  local rc=0 t
  for t in "${fuzz_targets[@]}"; do
    mkdir -p "$fuzz/corpus/$t"
    if "$fuzz/fuzz/fuzz_$t" -max_total_time="${TILEPATH_FUZZ_SECONDS:-20}" -timeout=10 -rss_limit_mb=2048 \
      "$fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$fuzz/$t.log" 2>&1; then
      echo "fuzz_$t: $(grep -E '^Done [0-9]+ runs' "$fuzz/$t.log" | tail -n 1)"
    else
      echo "fuzz_$t: FAILED (last lines of $fuzz/$t.log):" >&2
      tail -n 60 "$fuzz/$t.log" >&2
      rc=1
    fi
  done
  return $rc
}
if [ "$sanitizers" = OFF ]; then
  :
elif fuzz_build; then
  phase_done "fuzz build ($fuzz/)"
  fuzz_runs || failed+=("fuzz job ($fuzz/)")
  phase_done "fuzz runs ($fuzz/)"
else
  failed+=("fuzz build ($fuzz/)")
  phase_done "fuzz build ($fuzz/)"
fi

echo "test.sh: time per phase"
printf '  %s\n' "${timings[@]}"
if [ -n "$format_report" ]; then printf '%s\n' "$format_report" >&2; fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: FAILED: $(printf '%s; ' "${failed[@]}" | sed 's/; $//')" >&2
  exit 1
fi
if [ "$sanitizers" = ON ]; then
  echo "test.sh: all passed (format check, tests in build/, sanitizer job, fuzz job)"
else
  echo "test.sh: all passed (format check, tests in build/)"
fi
