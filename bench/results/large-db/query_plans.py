# The GUI case list's queries (RunStore::cases with DatabaseSession::listDetail) on the large
# file: EXPLAIN QUERY PLAN and the time to step through every row from Python's sqlite3.
import sqlite3, sys, time
path = sys.argv[1]
db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
names = ["latency_us", "latency_min_us", "latency_max_us", "tile_interval_us", "floor_fraction",
         "stream_same_bytes_fraction", "tile_tokens", "gate_rows_checked", "gate_rows_total", "gate_rel_l2_median",
         "gate_max_abs_median", "gate_kl_median", "gate_top8_median", "gate_top32_median"]
metrics = ["kernel_check_rel_l2", "rel_l2", "max_abs", "kl", "top8", "top32"]
queries = [
    ("cases", "SELECT c.*, r.uuid, r.backend, r.device FROM cases c JOIN runs r ON r.id = c.run_id ORDER BY c.id", []),
    ("measurements", "SELECT case_id, name, value, unit FROM measurements WHERE 1 AND name IN (%s)" % ",".join("?" * len(names)), names),
    ("stage_costs", "SELECT case_id, stage, method, cost_us FROM stage_costs ORDER BY id", []),
    ("quality", "SELECT case_id, metric, value, threshold, passed, distribution FROM quality WHERE 1 AND metric IN (%s) ORDER BY id" % ",".join("?" * len(metrics)), metrics),
    ("artifacts", "SELECT case_id, name, mime, size, sha256 FROM artifacts WHERE 1 AND name IN (?) ORDER BY case_id, id", ["gate.json"]),
]
for name, sql, params in queries:
    plan = db.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    t0 = time.perf_counter()
    rows = sum(1 for _ in db.execute(sql, params))
    print(f"{name}: {rows} rows, {time.perf_counter() - t0:.3f} s\n  {sql}\n  plan: {[p[3] for p in plan]}")
