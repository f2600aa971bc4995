// Schema ladder of the run store. Never edit a released step: add a new one.
#include "core/store/migrations.h"

#include <sqlite3.h>

#include <string>

#include "core/sha256.h"
#include "core/store/run_store.h"
#include "core/store/sqlite_util.h"

namespace tilepath::store {

const std::vector<std::string>& tilepath_tables() {
  static const std::vector<std::string> tables = {"runs",        "cases",   "measurements", "stage_costs",
                                                  "predictions", "quality", "artifacts"};
  return tables;
}

int read_user_version(sqlite3* db, const std::string& path) {
  Statement q(db, path, "PRAGMA user_version");
  if (!q.step()) throw StoreError(path + ": PRAGMA user_version returned no row");
  return q.integer(0);
}

// v1: the first released schema. tests/store/fixtures/schema_v1.sql carries the
// same statements; keep them identical (test_migrations compares the result).
void migrate_v0_to_v1(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  tool_version TEXT NOT NULL DEFAULT '',
  git_revision TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  backend TEXT NOT NULL DEFAULT '',
  backend_version TEXT NOT NULL DEFAULT '',
  device TEXT NOT NULL DEFAULT '',
  command TEXT NOT NULL DEFAULT '',
  notes TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_backend_device ON runs(backend, device);

CREATE TABLE cases (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  case_key TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'unsupported', 'error', 'cancelled')),
  message TEXT NOT NULL DEFAULT '',
  finished_at TEXT,
  batch INTEGER NOT NULL,
  context INTEGER NOT NULL,
  context_lengths TEXT NOT NULL DEFAULT '[]',
  q_heads INTEGER NOT NULL,
  kv_heads INTEGER NOT NULL,
  head_dim INTEGER NOT NULL,
  page_size INTEGER NOT NULL,
  kv TEXT NOT NULL,
  k_path TEXT NOT NULL,
  mode TEXT NOT NULL,
  k_repr TEXT NOT NULL,
  rope TEXT NOT NULL,
  scale TEXT NOT NULL,
  cache TEXT NOT NULL,
  splits INTEGER NOT NULL,
  kernel_name TEXT NOT NULL DEFAULT '',
  cubin_sha256 TEXT NOT NULL DEFAULT '',
  regs_per_thread INTEGER,
  smem_static_bytes INTEGER,
  smem_dynamic_bytes INTEGER,
  occupancy_theoretical REAL,
  occupancy_achieved REAL,
  grid_x INTEGER NOT NULL DEFAULT 0,
  grid_y INTEGER NOT NULL DEFAULT 0,
  grid_z INTEGER NOT NULL DEFAULT 0,
  block_x INTEGER NOT NULL DEFAULT 0,
  block_y INTEGER NOT NULL DEFAULT 0,
  block_z INTEGER NOT NULL DEFAULT 0,
  splits_used INTEGER NOT NULL DEFAULT 0,
  UNIQUE (run_id, case_key)
);
CREATE INDEX cases_by_key ON cases(case_key);

CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value REAL,
  unit TEXT NOT NULL DEFAULT ''
);
CREATE INDEX measurements_by_case ON measurements(case_id);

CREATE TABLE stage_costs (
  id INTEGER PRIMARY KEY,
  case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  stage TEXT NOT NULL,
  method TEXT NOT NULL,
  cost_us REAL
);
CREATE INDEX stage_costs_by_case ON stage_costs(case_id);

CREATE TABLE predictions (
  id INTEGER PRIMARY KEY,
  case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  model TEXT NOT NULL DEFAULT '',
  ii_us REAL,
  limiting_stage TEXT NOT NULL DEFAULT '',
  limiting_agent TEXT NOT NULL DEFAULT '',
  overlap_efficiency REAL,
  detail_json TEXT NOT NULL DEFAULT ''
);
CREATE INDEX predictions_by_case ON predictions(case_id);

CREATE TABLE quality (
  id INTEGER PRIMARY KEY,
  case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  metric TEXT NOT NULL,
  value REAL,
  threshold REAL,
  passed INTEGER NOT NULL CHECK (passed IN (0, 1))
);
CREATE INDEX quality_by_case ON quality(case_id);

CREATE TABLE artifacts (
  id INTEGER PRIMARY KEY,
  case_id INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  mime TEXT NOT NULL DEFAULT '',
  size INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE INDEX artifacts_by_case ON artifacts(case_id);
)sql");
}

// v2: artifacts get a SHA-256 checksum (so exports/merges can be verified and
// identical profiler dumps recognised), and the quality distribution becomes its
// own column. v1 folded it into the metric name as "<metric>@<distribution>".
void migrate_v1_to_v2(sqlite3* db, const std::string& path) {
  exec(db, path,
       "ALTER TABLE artifacts ADD COLUMN sha256 TEXT NOT NULL DEFAULT '';"
       "ALTER TABLE quality ADD COLUMN distribution TEXT NOT NULL DEFAULT '';");

  // Backfill checksums one blob at a time (blobs can be large).
  Statement ids(db, path, "SELECT id FROM artifacts ORDER BY id");
  std::vector<std::int64_t> artifact_ids;
  while (ids.step()) artifact_ids.push_back(ids.int64(0));
  Statement read(db, path, "SELECT data FROM artifacts WHERE id = ?");
  Statement write(db, path, "UPDATE artifacts SET sha256 = ? WHERE id = ?");
  for (std::int64_t id : artifact_ids) {
    read.reset();
    read.bind(1, id);
    if (!read.step()) continue;
    const std::string digest = sha256_hex(read.blob(0));
    write.reset();
    write.bind(1, digest).bind(2, id).run();
  }

  // Split "<metric>@<distribution>"; rows written without a distribution keep
  // their metric and get 'unknown' (v1 could not say which one it was).
  exec(db, path,
       "UPDATE quality SET distribution = substr(metric, instr(metric, '@') + 1),"
       " metric = substr(metric, 1, instr(metric, '@') - 1) WHERE instr(metric, '@') > 0;"
       "UPDATE quality SET distribution = 'unknown' WHERE distribution = '';");
}

// v3: a prediction lists the stages of its case's graph whose cost was unknown (a
// JSON list of stage names; the II counts them as 0). Rows derived before keep NULL:
// their derivation filled unknown costs with 0 and did not say so, and a migration
// cannot derive them again (`tilepath db reanalyze` does).
void migrate_v2_to_v3(sqlite3* db, const std::string& path) {
  exec(db, path, "ALTER TABLE predictions ADD COLUMN unknown_stages TEXT;");
}

// v4: a speed run stores two verdicts on its output, the kernel check (the kernel against
// an emulation of its own arithmetic) and the numerical gate (against full precision).
// Until v3 the check was the only one, stored as `rel_l2`/`max_abs` of distribution
// `random`, and CUDA runs counted its rows as `rows_checked`/`rows_total`; it gets its own
// names so those rows are never read as a gate. Gate rows (named distributions) stay.
void migrate_v3_to_v4(sqlite3* db, const std::string& path) {
  exec(db, path,
       "UPDATE quality SET metric = 'kernel_check_' || metric"
       " WHERE distribution = 'random' AND metric IN ('rel_l2', 'max_abs');"
       "UPDATE measurements SET name = 'kernel_check_' || name WHERE name IN ('rows_checked', 'rows_total');");
}

// v5: a process claims a case before it runs it, so that sweeps sharing a file (several
// devices, hosts or shells) never run one case twice; the claim goes when the case is
// stored. Claims of a process that is gone are taken over (RunStore::claim_case). A run
// records the process that began it, so that one left open by a killed process is marked
// interrupted instead of looking as if it still ran.
void migrate_v4_to_v5(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
ALTER TABLE runs ADD COLUMN owner_host TEXT;
ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
CREATE TABLE claims (
  backend TEXT NOT NULL,
  device TEXT NOT NULL,
  case_key TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  claimed_at REAL NOT NULL,
  PRIMARY KEY (backend, device, case_key)
);
)sql");
}

// v6: a claim's owner refreshes claims.heartbeat_at while it holds the claim, so that a
// claim from another host counts as its owner's for as long as the heartbeat is fresh
// (RunStore::kClaimHeartbeatTimeoutSeconds) instead of for two hours after it was taken.
// Claims of older files get their claimed_at: the time their owner was last known alive.
void migrate_v5_to_v6(sqlite3* db, const std::string& path) {
  exec(db, path,
       "ALTER TABLE claims ADD COLUMN heartbeat_at REAL NOT NULL DEFAULT 0;"
       "UPDATE claims SET heartbeat_at = claimed_at;");
}

// v7: a case records the matrix instruction family its kernel issued QK and PV on (mma:
// mma_sync | wgmma). Every case stored before ran mma.sync kernels (cuda), emulated their
// numerics (cpu), modelled them (sim) or issued the synchronous register-operand MFMA
// (hip), so existing rows get mma_sync.
void migrate_v6_to_v7(sqlite3* db, const std::string& path) {
  exec(db, path, "ALTER TABLE cases ADD COLUMN mma TEXT NOT NULL DEFAULT 'mma_sync';");
}

// v8: a run records which of the host's devices ran it, the plugin's index and the device's
// identity on the host (a GPU's PCI bus id), so that the runs of a sweep over several GPUs of
// one model name the GPU each ran on. Older runs did not record it: NULL and ''.
void migrate_v7_to_v8(sqlite3* db, const std::string& path) {
  exec(db, path,
       "ALTER TABLE runs ADD COLUMN device_index INTEGER;"
       "ALTER TABLE runs ADD COLUMN device_uid TEXT NOT NULL DEFAULT '';");
}

void migrate_to_current(sqlite3* db, const std::string& path) {
  if (read_user_version(db, path) == kCurrentSchemaVersion) return;  // read-only fast path, no lock

  Transaction tx(db, path);
  // Re-read under the write lock: another process may have migrated meanwhile.
  const int version = read_user_version(db, path);
  if (version > kCurrentSchemaVersion)
    throw StoreError(path + ": schema version " + std::to_string(version) + " is newer than this tilepath supports (" +
                     std::to_string(kCurrentSchemaVersion) + "); use a newer tilepath");
  if (version < 1) migrate_v0_to_v1(db, path);
  if (version < 2) migrate_v1_to_v2(db, path);
  if (version < 3) migrate_v2_to_v3(db, path);
  if (version < 4) migrate_v3_to_v4(db, path);
  if (version < 5) migrate_v4_to_v5(db, path);
  if (version < 6) migrate_v5_to_v6(db, path);
  if (version < 7) migrate_v6_to_v7(db, path);
  if (version < 8) migrate_v7_to_v8(db, path);
  // PRAGMA cannot take a bound parameter; the value is our own constant.
  exec(db, path, "PRAGMA user_version = " + std::to_string(kCurrentSchemaVersion));
  tx.commit();
}

}  // namespace tilepath::store
