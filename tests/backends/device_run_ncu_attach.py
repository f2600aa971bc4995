#!/usr/bin/env python3
"""backends/cuda/scripts/device_run.sh ncu-attach: an earlier call's ncu CSVs attached to a database.

A stand-in `tilepath` (it logs its arguments) takes the place of the CLI, so the test checks what
the step asks of it: one `tilepath attach --ncu-csv` per CSV present, at its family's operating
point (the wgmma flag for `-wgmma` files, `--k-repr prebias` without the inputs' keys for
`-prebias` files), nothing for a family whose CSV is absent, and a failing step when the CLI
refuses an attach (every CSV still tried) or when there is no database.

  python3 tests/backends/device_run_ncu_attach.py SOURCE_DIR
"""
import os
import shlex
import stat
import subprocess
import sys
import tempfile


def stand_in_cli(build):
    """BUILD/bin/tilepath that appends its arguments to BUILD/calls.txt, and fails where
    STAND_IN_FAILS is set."""
    os.makedirs(os.path.join(build, "bin"))
    os.makedirs(os.path.join(build, "plugins"))
    path = os.path.join(build, "bin", "tilepath")
    with open(path, "w") as f:
        f.write(f"#!/usr/bin/env bash\necho \"$*\" >>{shlex.quote(os.path.join(build, 'calls.txt'))}\n"
                "if [ -n \"${STAND_IN_FAILS:-}\" ]; then echo 'no such case' >&2; exit 1; fi\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return os.path.join(build, "calls.txt")


def run_step(source, tmp, build, db, ncu_dir, fails=False):
    # The script takes BUILD relative to the source tree.
    env = dict(os.environ, OUT=os.path.join(tmp, "out"), BUILD=os.path.relpath(build, source), SWEEP_DB=db,
               NCU_DIR=ncu_dir)
    for name in ("STAND_IN_FAILS", "NCU_MATCH"):  # the caller's environment picks nothing here
        env.pop(name, None)
    if fails:
        env["STAND_IN_FAILS"] = "1"
    return subprocess.run(["bash", "backends/cuda/scripts/device_run.sh", "ncu-attach"], cwd=source, env=env,
                          capture_output=True, text=True, timeout=60)


def main():
    source = os.path.abspath(sys.argv[1])
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="tilepath-ncu-attach-") as tmp:
        build = os.path.join(tmp, "build")
        calls = stand_in_cli(build)
        ncu_dir = os.path.join(tmp, "ncu")
        os.makedirs(ncu_dir)
        present = ["ncu-k8v8-fp8_qk-k_only.csv", "ncu-k8v8-fp8_qk-k_only-wgmma.csv",
                   "ncu-k8v8-transform-full-prebias.csv"]
        for name in present:
            with open(os.path.join(ncu_dir, name), "w") as f:
                f.write("stand-in\n")
        db = os.path.join(tmp, "sweep.sqlite")
        open(db, "w").close()

        done = run_step(source, tmp, build, db, ncu_dir)
        check(done.returncode == 0, f"the step failed with a database: rc {done.returncode}\n{done.stdout}{done.stderr}")
        lines = open(calls).read().splitlines() if os.path.exists(calls) else []
        check(len(lines) == len(present), f"{len(lines)} attach calls for {len(present)} CSVs: {lines}")
        by_file = {}
        for line in lines:
            args = line.split()
            by_file[os.path.basename(args[args.index("--file") + 1])] = args
        for name in present:
            args = by_file.get(name)
            check(args is not None, f"{name} was not attached")
            if args is None:
                continue
            check(args[:2] == ["attach", "--db"] and args[2] == db and "--ncu-csv" in args,
                  f"{name}: not an attach --ncu-csv to the database: {args}")
            flags = " ".join(args)
            check("--kv k8v8" in flags and "--batch 64 --context 4096" in flags and "--cache hbm_cold" in flags,
                  f"{name}: not its operating point: {flags}")
            check(("--mma wgmma" in flags) == name.endswith("-wgmma.csv"), f"{name}: the wgmma flag: {flags}")
            check(("--k-repr prebias" in flags) == name.endswith("-prebias.csv"), f"{name}: the prebias flag: {flags}")
            check("--keys" not in flags, f"{name}: the inputs' keys are not part of the operating point: {flags}")
        args = by_file.get("ncu-k8v8-transform-full-prebias.csv") or []
        check("--k-path transform --mode full" in " ".join(args), f"the prebias family's path and mode: {args}")
        check("no " + os.path.join(ncu_dir, "ncu-k16v16-k16-none.csv") in done.stdout,
              f"an absent family's CSV is not reported: {done.stdout}")

        os.remove(calls)
        done = run_step(source, tmp, build, db, ncu_dir, fails=True)
        check(done.returncode != 0, "the step passed when the CLI refused every attach")
        check("attach of " + os.path.join(ncu_dir, present[0]) + " failed" in done.stdout,
              f"a refused attach is not reported: {done.stdout}")
        lines = open(calls).read().splitlines() if os.path.exists(calls) else []
        check(len(lines) == len(present), f"the step stopped at the first refused attach: {lines}")

        os.remove(calls)
        done = run_step(source, tmp, build, os.path.join(tmp, "missing.sqlite"), ncu_dir)
        check(done.returncode != 0, "the step passed without a database")
        check(not os.path.exists(calls), "the step attached without a database")

    for f in failures:
        print("FAIL:", f)
    print(f"device_run.sh ncu-attach: {'ok' if not failures else f'{len(failures)} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
