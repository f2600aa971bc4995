#pragma once
// The run-store schema ladder: PRAGMA user_version names the schema version and
// one function per step upgrades it (see docs/schema.md, "Version history").

#include <string>
#include <vector>

struct sqlite3;

namespace tilepath::store {

// The schema this build writes. Bump it together with a new migrate_vN_to_vN1
// step, a fixture tests/store/fixtures/schema_vN.sqlite and docs/schema.md.
inline constexpr int kCurrentSchemaVersion = 8;

// The oldest schema RunStore::open_read_only reads as it is, without an upgrade: every
// step after it changed nothing that readers read, or added a column whose value for every
// older row readers know (v6 only added claims.heartbeat_at, which only claim_case reads; v7
// added cases.mma, which readers of a file without it take as 'mma_sync', what every older
// row holds; v8 added the runs' device index and uid, which readers of a file without them
// take as not recorded, what the upgrade gives older runs). A new step that changes what
// readers read otherwise raises it to the new version; files older than it are refused
// read-only with `tilepath db upgrade`.
inline constexpr int kOldestSchemaReadAsIs = 5;

// Tables every tilepath schema (v1 and later) has.
const std::vector<std::string>& tilepath_tables();

// One function per step. Each runs inside the caller's transaction and does not
// touch user_version (migrate_to_current sets it once at the end).
void migrate_v0_to_v1(sqlite3* db, const std::string& path);  // creates the schema
void migrate_v1_to_v2(sqlite3* db, const std::string& path);  // artifacts.sha256, quality.distribution
void migrate_v2_to_v3(sqlite3* db, const std::string& path);  // predictions.unknown_stages
void migrate_v3_to_v4(sqlite3* db, const std::string& path);  // kernel-check rows named as such
void migrate_v4_to_v5(sqlite3* db, const std::string& path);  // claims
void migrate_v5_to_v6(sqlite3* db, const std::string& path);  // claims.heartbeat_at
void migrate_v6_to_v7(sqlite3* db, const std::string& path);  // cases.mma
void migrate_v7_to_v8(sqlite3* db, const std::string& path);  // runs.device_index, runs.device_uid

// Reads user_version and applies every missing step in ONE transaction, so an
// interrupted upgrade leaves the file at its old version. A no-op (and no write
// lock taken) when the file is already current. Throws StoreError when the file
// is newer than this build.
void migrate_to_current(sqlite3* db, const std::string& path);

int read_user_version(sqlite3* db, const std::string& path);

}  // namespace tilepath::store
