#!/usr/bin/env bash
# The Slurm job-array path of docs/slurm-sweep-array.sbatch against a real single-node Slurm:
# munged, slurmctld and slurmd (Debian's slurm-wlm and munge) configured for this host in a
# temporary folder and started by this script, a 3-task array sweeping data/sweeps/cpu-demo.json
# on the cpu backend (`tilepath sweep --shard I/3`), then `tilepath merge` of the three shards,
# whose case set must equal a single-process sweep's. Everything it started is stopped at the
# end. Needs root (the daemons run as root) and the packages; without them it says so and
# exits 77 (a skip for ctest and app/test.sh).
# Usage: bash tests/slurm/job_array_test.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
tilepath=$build/bin/tilepath
skip() {
  echo "slurm job-array test SKIPPED: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to start munged, slurmctld and slurmd"
for b in munged slurmctld slurmd sbatch squeue; do
  command -v "$b" >/dev/null || skip "$b not found (app/setup.sh --with-slurm installs slurm-wlm and munge)"
done
[ -x "$tilepath" ] || skip "no $tilepath (build first)"

work=$(mktemp -d /tmp/tilepath-slurm-XXXXXX)
pids=()
cleanup() {
  # Daemons that wrote a pid file but failed the script before it recorded them are stopped too.
  for f in "$work"/run/*.pid "$work"/munge/munged.pid; do
    [ -s "$f" ] && pids+=("$(cat "$f")")
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
host=$(hostname -s)
cpus=$(nproc)
mkdir -p "$work"/{state,spool,munge,log,run}

# munge: a fresh key and socket of our own, so a system munged (if any) is left alone.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munge/seed"
for _ in $(seq 50); do [ -s "$work/munge/munged.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/munge/munged.pid")")

cat >"$work/slurm.conf" <<EOF
ClusterName=tilepath-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf
daemon_failed() {
  tail -n 20 "$work/log/slurmctld.log" "$work/log/slurmd.log" >&2 2>/dev/null || true
  echo "slurm job-array test FAILED: $1 did not start" >&2
  exit 1
}
slurmctld -f "$SLURM_CONF" || daemon_failed slurmctld
slurmd -f "$SLURM_CONF" || daemon_failed slurmd
for _ in $(seq 100); do [ -s "$work/run/slurmctld.pid" ] && [ -s "$work/run/slurmd.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/run/slurmd.pid")" "$(cat "$work/run/slurmctld.pid")")
for _ in $(seq 100); do
  sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed)' && break
  sleep 0.2
done
sinfo -h -o '%N %T' || true
sinfo -h -o '%T' | grep -qE '^(idle|mixed)' || {
  tail -n 20 "$work/log/slurmctld.log" "$work/log/slurmd.log" >&2
  echo "slurm job-array test FAILED: the node did not come up" >&2
  exit 1
}

# The array: each task runs its shard into its own database in $work.
spec=$(realpath data/sweeps/cpu-demo.json)
n=3
cd "$work"
jid=$(PATH=$build/bin:$PATH TILEPATH_PLUGIN_PATH=$build/plugins TILEPATH_MODELS_DIR=$OLDPWD/models \
  sbatch --parsable --array=0-$((n - 1)) --output="$work/log/task-%a.out" \
  --export=ALL,SPEC="$spec",N=$n,BACKEND=cpu "$OLDPWD/docs/slurm-sweep-array.sbatch")
echo "submitted array job $jid ($n tasks)"
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break
  sleep 0.5
done
[ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] || {
  squeue
  echo "slurm job-array test FAILED: the array did not finish in 300 s" >&2
  exit 1
}
for i in $(seq 0 $((n - 1))); do
  [ -s "shard-$i.sqlite" ] || {
    cat "$work/log/task-$i.out" >&2 || true
    echo "slurm job-array test FAILED: task $i wrote no shard-$i.sqlite" >&2
    exit 1
  }
done
export TILEPATH_PLUGIN_PATH=$build/plugins TILEPATH_MODELS_DIR=$OLDPWD/models
"$tilepath" merge shard-*.sqlite --out all.sqlite
"$tilepath" sweep "$spec" --backend cpu --db single.sqlite >/dev/null 2>&1
python3 - all.sqlite single.sqlite "$n" <<'PY'
import sqlite3, sys
def keys(path):
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    return sorted(k for (k,) in c.execute("SELECT case_key FROM cases"))
merged, single = keys(sys.argv[1]), keys(sys.argv[2])
runs = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute("SELECT COUNT(*) FROM runs").fetchone()[0]
ok = merged == single and len(set(merged)) == len(merged) and runs == int(sys.argv[3])
print(f"merged {len(merged)} cases from {runs} runs; single-process sweep {len(single)} cases; "
      f"{'the same case set' if merged == single else 'DIFFERENT case sets'}")
sys.exit(0 if ok else 1)
PY
echo "slurm job-array test passed"
