// SQLite run store: opening (with the checks that keep foreign files untouched),
// writing runs and cases, reading them back, export and merge. Schema: migrations.cpp.
#include "core/store/run_store.h"

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <system_error>
#include <thread>
#include <tuple>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/printable_text.h"
#include "core/sha256.h"
#include "core/store/claim_heartbeat.h"
#include "core/store/migrations.h"
#include "core/store/sqlite_util.h"

namespace tilepath {

using store::Connection;
using store::exec;
using store::Statement;
using store::Transaction;

namespace {

// How long any connection waits for a lock another process holds (RunStore::set_lock_wait).
std::atomic<int> g_lock_wait_ms{RunStore::kDefaultLockWaitMs};

// ---------------------------------------------------------------- file checks

enum class FileState { absent_or_empty, fresh_sqlite, tilepath };

struct Inspection {
  FileState state = FileState::absent_or_empty;
  int user_version = 0;
};

[[noreturn]] void not_tilepath(const std::string& path, const std::string& why) {
  throw StoreError(path + ": not a tilepath database (" + why + ")");
}

// SQLite URI that opens `path` read-only ("%", "?" and "#" escaped). A reader of a file
// in WAL mode needs its -shm (and -wal) beside it and creates them when they are absent,
// leaving them behind; in a read-only folder it cannot, and the open fails. With no -wal
// there is no writer and nothing outside the file: such a file is read as immutable
// (no locks, no -shm), and changes only through a writer, which re-creates the -wal.
std::string read_only_uri(const std::string& path) {
  std::error_code ec;
  bool wal_mode = false;
  {
    std::ifstream in(path, std::ios::binary);
    char header[19] = {};
    wal_mode = in.read(header, sizeof header) && header[18] == 2;
  }
  std::string abs = std::filesystem::absolute(path, ec).string();
  if (ec) abs = path;
  std::string uri = "file:";
  for (char ch : abs) {
    if (ch == '%' || ch == '?' || ch == '#') {
      static const char* digits = "0123456789ABCDEF";
      uri += '%';
      uri += digits[(static_cast<unsigned char>(ch) >> 4) & 0xf];
      uri += digits[static_cast<unsigned char>(ch) & 0xf];
    } else {
      uri += ch;
    }
  }
  uri += "?mode=ro";
  if (wal_mode && !std::filesystem::exists(path + "-wal", ec)) uri += "&immutable=1";
  return uri;
}

std::uint32_t big_endian32(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}

// Looks at a file before anything can write to it. Throws StoreError (and leaves
// the file as it was) for anything that is not an empty file, a new SQLite file
// or a tilepath database of a version this build understands.
// A rollback journal left by a writer killed mid-transaction (a "hot" journal) must be
// played back before anyone reads the file, and a read-only connection cannot do it
// ("attempt to write a readonly database"). SQLite plays it back on the first read of a
// read-write connection, and only when the journal is hot (no live writer holds it), so
// opening one and reading is the whole recovery. A file or folder that cannot be
// written cannot be recovered here: say so and what to do.
void recover_hot_journal(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string journal = path + "-journal";
  if (!fs::exists(journal, ec) || fs::file_size(journal, ec) == 0) return;
  const fs::path folder = fs::absolute(path, ec).parent_path();
  if (::access(path.c_str(), W_OK) != 0 || ::access(folder.c_str(), W_OK) != 0)
    throw StoreError(path + ": an interrupted write left " + journal +
                     " to be rolled back, and the file or its folder is not writable; make both writable and run "
                     "any tilepath command on it once (it rolls the write back), or copy the file and its journal "
                     "together to a writable folder");
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) store::throw_sqlite(raw, path, "open to roll back " + journal, rc);
  sqlite3_busy_timeout(raw, g_lock_wait_ms.load());
  Statement probe(raw, path, "SELECT count(*) FROM sqlite_master");
  probe.step();
}

Inspection inspect_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return {};
  if (!fs::is_regular_file(status)) throw StoreError(path + ": not a regular file");
  const auto file_size = fs::file_size(path, ec);
  if (ec) throw StoreError(path + ": cannot read size: " + ec.message());
  if (file_size == 0) return {};
  // Before the header is read: an interrupted write may have left it half done.
  recover_hot_journal(path);

  // The 100-byte SQLite header: magic, page size, and (when valid) the page count.
  std::array<unsigned char, 100> header{};
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw StoreError(path + ": cannot open for reading: " + std::strerror(errno));
    in.read(reinterpret_cast<char*>(header.data()), header.size());
    static constexpr char kMagic[] = "SQLite format 3";  // 15 chars + NUL = 16 bytes
    if (in.gcount() < static_cast<std::streamsize>(header.size()) || std::memcmp(header.data(), kMagic, 16) != 0)
      not_tilepath(path, "not an SQLite file");
  }
  const std::uint32_t raw_page_size = (std::uint32_t(header[16]) << 8) | header[17];
  const std::uint64_t page_size = raw_page_size == 1 ? 65536 : raw_page_size;
  const std::uint32_t change_counter = big_endian32(&header[24]);
  const std::uint32_t page_count = big_endian32(&header[28]);
  const std::uint32_t valid_for = big_endian32(&header[92]);
  if (page_size < 512 || (page_size & (page_size - 1)) != 0) not_tilepath(path, "corrupt SQLite header");
  // The in-header size is trustworthy only when valid_for matches the change counter,
  // and only while no other connection holds the database in WAL mode: a checkpoint
  // writes page 1 (the new size) before the pages that grow the file, so a reader
  // opening meanwhile would see a "truncated" live database.
  const bool live_wal = fs::exists(path + "-wal", ec);
  if (!live_wal && valid_for == change_counter && page_count > 0 && file_size < page_count * page_size)
    not_tilepath(path, "truncated: header says " + std::to_string(page_count * page_size) + " bytes, file has " +
                           std::to_string(file_size));

  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(read_only_uri(path).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) store::throw_sqlite(raw, path, "open", rc);
  sqlite3_busy_timeout(raw, g_lock_wait_ms.load());

  std::vector<std::string> tables;
  {
    Statement q(raw, path,
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
    while (q.step()) tables.push_back(q.text(0));
  }
  const int version = store::read_user_version(raw, path);
  auto has = [&](const std::string& t) { return std::find(tables.begin(), tables.end(), t) != tables.end(); };

  // user_version is a signed 32-bit field; tilepath writes 1..current only.
  if (version < 0)
    not_tilepath(path, "user_version " + std::to_string(version) + " is no tilepath schema version (1.." +
                           std::to_string(store::kCurrentSchemaVersion) + ")");
  if (version == 0) {
    if (tables.empty()) return {FileState::fresh_sqlite, 0};
    std::string names;
    for (std::size_t i = 0; i < tables.size() && i < 5; ++i) names += (i ? ", " : "") + tables[i];
    if (tables.size() > 5) names += ", ...";
    not_tilepath(path, "user_version 0 and foreign tables: " + names);
  }
  for (const auto& t : store::tilepath_tables())
    if (!has(t)) not_tilepath(path, "user_version " + std::to_string(version) + " but no '" + t + "' table");
  if (version > store::kCurrentSchemaVersion)
    throw StoreError(path + ": schema version " + std::to_string(version) + " is newer than this tilepath supports (" +
                     std::to_string(store::kCurrentSchemaVersion) + "); use a newer tilepath");
  return {FileState::tilepath, version};
}

void configure_connection(sqlite3* db, const std::string& path, bool read_only) {
  store::check_rc(sqlite3_busy_timeout(db, g_lock_wait_ms.load()), db, path, "busy_timeout");
  sqlite3_extended_result_codes(db, 1);
  exec(db, path, "PRAGMA foreign_keys = ON");
  if (read_only) {
    exec(db, path, "PRAGMA query_only = ON");
    return;
  }
  // WAL: readers (GUI, report) never block the sweep writing cases. FULL sync:
  // a committed case survives power loss, not only a crash of the process.
  // The switch needs the file to itself, and SQLite does not wait for it while another
  // connection holds a write lock (it would risk a deadlock): wait here instead, as long
  // as for any other lock.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(g_lock_wait_ms.load());
  std::string mode;
  for (;;) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &raw, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(raw);
    if (rc == SQLITE_ROW) mode = reinterpret_cast<const char*>(sqlite3_column_text(raw, 0));
    sqlite3_finalize(raw);
    const int primary = rc & 0xff;
    if (rc == SQLITE_ROW && mode == "wal") break;
    // A switch that could not get the lock fails busy or reports the rollback mode it
    // stayed in; anything else (a file system without WAL) is final.
    const bool busy = primary == SQLITE_BUSY || primary == SQLITE_LOCKED ||
                      (rc == SQLITE_ROW && (mode == "delete" || mode == "truncate" || mode == "persist"));
    if (busy && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (busy) throw StoreError(path + " is locked by another process");
    throw StoreError(path + ": cannot switch to WAL journal mode (got '" + mode + "')");
  }
  exec(db, path, "PRAGMA synchronous = FULL");
}

// `name`: the path, or a URI for it (flags with SQLITE_OPEN_URI); errors name the path.
Connection open_connection(const std::string& path, int flags, const std::string& name = {}) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2((name.empty() ? path : name).c_str(), &raw, flags, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) store::throw_sqlite(raw, path, "open", rc);
  return db;
}

// ---------------------------------------------------------------- values

std::string now_iso8601_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Random (version 4) UUID: identifies a run across merged files.
std::string random_uuid_v4() {
  std::random_device rd;
  std::array<std::uint8_t, 16> b{};
  for (std::size_t i = 0; i < b.size(); i += 4) {
    const std::uint32_t r = rd();
    for (int k = 0; k < 4; ++k) b[i + k] = static_cast<std::uint8_t>(r >> (8 * k));
  }
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(digits[b[i] >> 4]);
    s.push_back(digits[b[i] & 0xf]);
  }
  return s;
}

std::string context_lengths_json(const std::vector<int>& lengths) { return nlohmann::json(lengths).dump(); }

// `where` names the case in an error: built only for one.
template <class Where>
std::vector<int> parse_context_lengths(std::string_view text, const Where& where) {
  if (text.empty() || text == "[]") return {};  // every uniform batch: no JSON parser per case
  try {
    return nlohmann::json::parse(text).get<std::vector<int>>();
  } catch (const std::exception& e) {
    throw StoreError(where() + ": context_lengths is not a JSON list of integers: " + e.what());
  }
}

// Whether `table` of schema `db_name` has `column` (a file read as it is may be older than
// the step that added it).
bool has_column(sqlite3* db, const std::string& path, const std::string& db_name, const std::string& table,
                const std::string& column) {
  Statement q(db, path, "PRAGMA " + db_name + ".table_info(" + table + ")");
  while (q.step())
    if (q.text(1) == column) return true;
  return false;
}

// cases.mma as an expression over cases c: a file before v7 (read as it is) has no such
// column, and every case it holds ran mma_sync.
std::string case_mma_column(sqlite3* db, const std::string& path, const std::string& db_name = "main") {
  return has_column(db, path, db_name, "cases", "mma") ? "c.mma" : "'mma_sync'";
}

// ---------------------------------------------------------------- filters

// A WHERE clause over cases c JOIN runs r and the values to bind, in order.
struct SqlFilter {
  std::string where;  // " AND ..." fragments after "WHERE 1"
  std::vector<std::variant<std::int64_t, std::string>> values;
  bool has_case_terms = false;

  void add(const std::string& column, std::int64_t v, bool case_term) {
    where += " AND " + column + " = ?";
    values.emplace_back(v);
    has_case_terms |= case_term;
  }
  void add(const std::string& column, const std::string& v, bool case_term) {
    where += " AND " + column + " = ?";
    values.emplace_back(v);
    has_case_terms |= case_term;
  }
  int bind(Statement& s, int first) const {
    int i = first;
    for (const auto& v : values) std::visit([&](const auto& x) { s.bind(i++, x); }, v);
    return i;
  }
};

// mma_column: case_mma_column of the file the filter reads.
SqlFilter build_filter(const CaseFilter& f, const std::string& mma_column) {
  SqlFilter s;
  if (f.run_id) s.add("r.id", *f.run_id, false);
  if (f.backend) s.add("r.backend", *f.backend, false);
  if (f.device) s.add("r.device", *f.device, false);
  if (f.kv) s.add("c.kv", *f.kv, true);
  if (f.k_path) s.add("c.k_path", *f.k_path, true);
  if (f.mode) s.add("c.mode", *f.mode, true);
  if (f.cache) s.add("c.cache", *f.cache, true);
  if (f.mma) s.add(mma_column, *f.mma, true);
  if (f.batch) s.add("c.batch", std::int64_t{*f.batch}, true);
  if (f.context) s.add("c.context", std::int64_t{*f.context}, true);
  if (f.head_dim) s.add("c.head_dim", std::int64_t{*f.head_dim}, true);
  if (f.status) s.add("c.status", std::string(to_string(*f.status)), true);
  return s;
}

// ---------------------------------------------------------------- case rows

// Column order shared by every SELECT that reads a case (read_case_columns); case_columns
// appends cases.mma as the file has it.
constexpr const char* kCaseColumns =
    "c.id, c.run_id, c.case_key, c.status, c.message, c.finished_at, c.batch, c.context, c.context_lengths, "
    "c.q_heads, c.kv_heads, c.head_dim, c.page_size, c.kv, c.k_path, c.mode, c.k_repr, c.rope, c.scale, c.cache, "
    "c.splits, c.kernel_name, c.cubin_sha256, c.regs_per_thread, c.smem_static_bytes, c.smem_dynamic_bytes, "
    "c.occupancy_theoretical, c.occupancy_achieved, c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z, "
    "c.splits_used";

// The case columns to SELECT from the file of db.
std::string case_columns(sqlite3* db, const std::string& path) {
  return std::string(kCaseColumns) + ", " + case_mma_column(db, path);
}

// Reads the case_columns starting at column c into rec, over what it held (a record reused by
// the next batch keeps its strings' buffers); leaves c after the last one and rec's child rows as
// they were.
void read_case_columns(const Statement& q, const std::string& path, int& c, CaseRecord& rec) {
  rec.id = q.int64(c++);
  rec.run_id = q.int64(c++);
  const auto where = [&] { return path + ": case " + std::to_string(rec.id); };
  try {
    q.text_to(c++, rec.case_key);
    rec.status = parse_case_status(q.text_view(c++));
    q.text_to(c++, rec.message);
    q.text_to(c++, rec.finished_at);
    OperatingPoint& op = rec.op;
    op.batch = q.integer(c++);
    op.context = q.integer(c++);
    op.context_lengths = parse_context_lengths(q.text_view(c++), where);
    op.q_heads = q.integer(c++);
    op.kv_heads = q.integer(c++);
    op.head_dim = q.integer(c++);
    op.page_size = q.integer(c++);
    op.kv = parse_kv_dtype(q.text_view(c++));
    op.k_path = parse_k_path(q.text_view(c++));
    op.mode = parse_transform_mode(q.text_view(c++));
    op.k_repr = parse_k_repr(q.text_view(c++));
    op.rope = parse_rope_layout(q.text_view(c++));
    op.scale = parse_scale_granularity(q.text_view(c++));
    op.cache = parse_cache_state(q.text_view(c++));
    op.splits = q.integer(c++);
  } catch (const ValidationError& e) {
    throw StoreError(where() + ": " + e.what());
  }
  KernelMeta& k = rec.kernel;
  q.text_to(c++, k.kernel_name);
  q.text_to(c++, k.cubin_sha256);
  k.regs_per_thread = q.integer(c++, -1);
  k.smem_static_bytes = q.integer(c++, -1);
  k.smem_dynamic_bytes = q.integer(c++, -1);
  k.occupancy_theoretical = q.real(c++);
  k.occupancy_achieved = q.real(c++);
  for (int& g : k.grid) g = q.integer(c++);
  for (int& b : k.block) b = q.integer(c++);
  k.splits = q.integer(c++);
  try {
    rec.op.mma = parse_mma(q.text_view(c++));
  } catch (const ValidationError& e) {
    throw StoreError(where() + ": " + e.what());
  }
  rec.artifacts.clear();
}

// predictions.unknown_stages: a JSON list of stage names, NULL when not recorded.
template <class Where>
std::vector<std::string> parse_stage_list(std::string_view text, const Where& where) {
  if (text == "[]") return {};  // a prediction with every stage measured: no JSON parser per case
  try {
    return nlohmann::json::parse(text).get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    throw StoreError(where() + ": predictions.unknown_stages is not a JSON list of stage names: " + e.what());
  }
}

// "?, ?, ?" for n parameters.
std::string placeholders(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += i ? ", ?" : "?";
  return s;
}

// Which cases a child-row query reads: one (its id the first parameter), every case, or the
// cases of an id range (the first two parameters, inclusive). The last two lead each row with
// the case id.
enum class CaseScope { one, all, range };

std::string scope_columns(CaseScope scope) { return scope == CaseScope::one ? "" : "case_id, "; }

std::string scope_term(CaseScope scope) {
  switch (scope) {
    case CaseScope::one:
      return " AND case_id = ?";
    case CaseScope::range:
      return " AND case_id BETWEEN ? AND ?";
    case CaseScope::all:
      break;
  }
  return "";
}

// The order of a child query's rows: a case's rows in the order they were stored. A range
// reads them through the table's case index, in case order (sorting a range by id alone costs
// a temporary B-tree, twice the time of the read).
std::string scope_order(CaseScope scope) {
  return scope == CaseScope::range ? " ORDER BY case_id, id" : " ORDER BY id";
}

// Binds the scope's parameters (none for every case); returns the next parameter.
int bind_scope(Statement& s, CaseScope scope, std::int64_t first_id, std::int64_t last_id) {
  if (scope == CaseScope::all) return 1;
  s.bind(1, first_id);
  if (scope == CaseScope::one) return 2;
  s.bind(2, last_id);
  return 3;
}

// The rows of a child table in `scope`, only those whose name_column is in names when there is a list.
std::string child_rows_sql(const char* columns, const char* table, const char* name_column,
                           const std::optional<std::vector<std::string>>& names, CaseScope scope) {
  std::string sql = "SELECT " + scope_columns(scope) + columns + " FROM " + table + " WHERE 1" + scope_term(scope);
  if (names) sql += std::string(" AND ") + name_column + " IN (" + placeholders(names->size()) + ")";
  return sql;
}

// Binds child_rows_sql's name list from parameter `first` on; returns the next parameter.
int bind_names(Statement& s, const std::optional<std::vector<std::string>>& names, int first) {
  if (names)
    for (const std::string& n : *names) s.bind(first++, n);
  return first;
}

std::string measurement_sql(const CaseDetail& d, CaseScope scope) {
  // With a name list a case's rows come in name order (the read index's order).
  return child_rows_sql("name, value, unit", "measurements", "name", d.measurements, scope) +
         (d.measurements ? "" : scope_order(scope));
}

std::string prediction_sql(const CaseDetail& d, CaseScope scope) {
  return "SELECT " + scope_columns(scope) + "ii_us, limiting_stage, limiting_agent, overlap_efficiency, model, " +
         (d.prediction_detail_json ? "detail_json" : "''") + ", unknown_stages FROM predictions WHERE 1" +
         scope_term(scope) + scope_order(scope);
}

// The columns after the case id of each child query, read into a row over what it held (rows
// of a record reused by the next batch keep their strings' buffers).
void read_measurement(const Statement& q, int c, Measurement& m) {
  q.text_to(c, m.name);
  m.value = q.real(c + 1);
  q.text_to(c + 2, m.unit);
}
// A measurement row's value (name in column c, value in c + 1) at its name's place in
// values.names, unless the case already has a value of that name (measurement() reads the
// first row of a name). `name_at`: the place of the previous row's name, tried first (rows
// come name by name through measurements_by_name).
void read_measurement_value(const Statement& q, int c, MeasurementValues& values, std::size_t& name_at) {
  const std::vector<std::string>& names = *values.names;
  const std::string_view name = q.text_view(c);
  if (name_at >= names.size() || names[name_at] != name) {
    name_at = static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    if (name_at == names.size()) return;  // not in the list
  }
  std::optional<double>& value = values.values[name_at];
  if (!value) value = q.real(c + 1);
}
// Empties `values` for a case's values by `names`.
void reset_measurement_values(MeasurementValues& values, const std::shared_ptr<const std::vector<std::string>>& names) {
  values.names = names;
  values.values.assign(names->size(), std::nullopt);
}
void read_stage_cost(const Statement& q, int c, StageCostRow& row, std::int64_t case_id, const std::string& path) {
  try {
    row = {parse_stage(q.text_view(c)), parse_cost_method(q.text_view(c + 1)), q.real(c + 2)};
  } catch (const ValidationError& e) {
    throw StoreError(path + ": case " + std::to_string(case_id) + ": stage_costs: " + e.what());
  }
}
void read_prediction(const Statement& q, int c, PredictionRow& p, std::int64_t case_id, const std::string& path) {
  p.ii_us = q.real(c);
  q.text_to(c + 1, p.limiting_stage);
  q.text_to(c + 2, p.limiting_agent);
  p.overlap_efficiency = q.real(c + 3);
  q.text_to(c + 4, p.model);
  q.text_to(c + 5, p.detail_json);
  p.unknown_stages.reset();
  if (!q.is_null(c + 6))
    p.unknown_stages = parse_stage_list(q.text_view(c + 6), [&] { return path + ": case " + std::to_string(case_id); });
}
void read_quality(const Statement& q, int c, QualityRow& row) {
  q.text_to(c, row.metric);
  row.value = q.real(c + 1);
  row.threshold = q.real(c + 2);
  row.passed = q.integer(c + 3) != 0;
  q.text_to(c + 4, row.distribution);
}
void read_artifact_info(const Statement& q, int c, ArtifactInfo& a) {
  q.text_to(c, a.name);
  q.text_to(c + 1, a.mime);
  a.size = q.int64(c + 2);
  q.text_to(c + 3, a.sha256);
}

constexpr const char* kStageCostColumns = "stage, method, cost_us";
constexpr const char* kQualityColumns = "metric, value, threshold, passed, distribution";
constexpr const char* kArtifactInfoColumns = "name, mime, size, sha256";

std::string stage_cost_sql(CaseScope scope) {
  return "SELECT " + scope_columns(scope) + kStageCostColumns + " FROM stage_costs WHERE 1" + scope_term(scope) +
         scope_order(scope);
}

// The ids of the cases in `scope` that have stage costs, from the table's case index alone.
std::string stage_cost_case_sql(CaseScope scope) {
  return "SELECT DISTINCT case_id FROM stage_costs WHERE 1" + scope_term(scope) + " ORDER BY case_id";
}

// Whether the read holds measurement values by name instead of Measurement rows.
bool reads_measurement_values(const CaseDetail& d) { return d.measurement_values_only && d.measurements.has_value(); }

// The names of CaseDetail::measurements, shared by the cases of one read; null without a list.
std::shared_ptr<const std::vector<std::string>> shared_measurement_names(const CaseDetail& d) {
  return reads_measurement_values(d) ? std::make_shared<const std::vector<std::string>>(*d.measurements) : nullptr;
}

std::string quality_sql(const CaseDetail& d, CaseScope scope) {
  return child_rows_sql(kQualityColumns, "quality", "metric", d.quality_metrics, scope) + scope_order(scope);
}

std::string artifact_info_sql(const CaseDetail& d, CaseScope scope) {
  return child_rows_sql(kArtifactInfoColumns, "artifacts", "name", d.artifact_names, scope) + " ORDER BY case_id, id";
}

// Reads the child rows of one case at a time; statements are prepared once so listing
// many cases does not re-parse the same SQL per case.
class ChildRowLoader {
 public:
  ChildRowLoader(sqlite3* db, const std::string& path, const CaseDetail& detail = {})
      : path_(path),
        detail_(detail),
        measurements_(db, path, measurement_sql(detail, CaseScope::one)),
        stage_costs_(db, path, stage_cost_sql(CaseScope::one)),
        measurement_names_(shared_measurement_names(detail)),
        stage_costs_stored_(db, path, "SELECT EXISTS (SELECT 1 FROM stage_costs WHERE case_id = ?)"),
        predictions_(db, path, prediction_sql(detail, CaseScope::one)),
        quality_(db, path, quality_sql(detail, CaseScope::one)),
        artifacts_(db, path, "SELECT name, mime, data, sha256 FROM artifacts WHERE case_id = ? ORDER BY id"),
        artifact_infos_(db, path, artifact_info_sql(detail, CaseScope::one)) {}

  std::vector<ArtifactInfo> artifact_infos(std::int64_t case_id) {
    std::vector<ArtifactInfo> out;
    artifact_infos_.reset();
    artifact_infos_.bind(1, case_id);
    bind_names(artifact_infos_, detail_.artifact_names, 2);
    while (artifact_infos_.step()) read_artifact_info(artifact_infos_, 0, out.emplace_back());
    return out;
  }

  bool has_stage_costs(std::int64_t case_id) {
    stage_costs_stored_.reset();
    stage_costs_stored_.bind(1, case_id);
    return stage_costs_stored_.step() && stage_costs_stored_.integer(0) != 0;
  }

  void load(CaseRecord& rec, bool with_artifacts) {
    measurements_.reset();
    bind_names(measurements_, detail_.measurements, 2);
    measurements_.bind(1, rec.id);
    if (measurement_names_) {
      reset_measurement_values(rec.measurement_values, measurement_names_);
      std::size_t name_at = 0;
      while (measurements_.step()) read_measurement_value(measurements_, 0, rec.measurement_values, name_at);
    } else {
      while (measurements_.step()) read_measurement(measurements_, 0, rec.measurements.emplace_back());
    }

    if (detail_.stage_costs) {
      stage_costs_.reset();
      stage_costs_.bind(1, rec.id);
      while (stage_costs_.step()) read_stage_cost(stage_costs_, 0, rec.stage_costs.emplace_back(), rec.id, path_);
    }
    if (detail_.predictions) {
      predictions_.reset();
      predictions_.bind(1, rec.id);
      while (predictions_.step()) read_prediction(predictions_, 0, rec.predictions.emplace_back(), rec.id, path_);
    }
    if (detail_.quality) {
      quality_.reset();
      quality_.bind(1, rec.id);
      bind_names(quality_, detail_.quality_metrics, 2);
      while (quality_.step()) read_quality(quality_, 0, rec.quality.emplace_back());
    }

    if (!with_artifacts) return;
    artifacts_.reset();
    artifacts_.bind(1, rec.id);
    while (artifacts_.step()) {
      Artifact a{artifacts_.text(0), artifacts_.text(1), artifacts_.blob(2)};
      // The bytes of a large artifact sit in overflow pages that no structure check reads:
      // its checksum is what tells damage there (empty in rows of files older than v2).
      const std::string stored = artifacts_.text(3);
      if (!stored.empty()) {
        if (const std::string actual = sha256_hex(a.data); actual != stored)
          throw StoreError(path_ + ": case " + std::to_string(rec.id) + "'s artifact '" + a.name +
                           "' is damaged: its bytes hash to " + actual + ", stored " + stored);
      }
      rec.artifacts.push_back(std::move(a));
    }
  }

 private:
  const std::string& path_;
  CaseDetail detail_;
  Statement measurements_, stage_costs_;
  std::shared_ptr<const std::vector<std::string>> measurement_names_;  // null: Measurement rows
  Statement stage_costs_stored_, predictions_, quality_, artifacts_, artifact_infos_;
};

// An inclusive range of case ids.
struct CaseIdRange {
  std::int64_t first = 0, last = 0;
};

// Reads the child rows of the listed cases at once: one pass over each child table (or over
// its rows of `range`, which holds every listed case) instead of one lookup per case and
// table (100k cases: 500k statements). `out` is ordered by case id.
// `parallel`: the passes over the tables run on three threads, two of them with
// read-only connections of their own. Their snapshots may be newer than the case list's;
// a case and its child rows are stored in one transaction, so a listed case's rows are
// in every later snapshot, and rows of cases stored since are skipped.
void load_all_children(sqlite3* db, const std::string& path, const CaseDetail& detail, std::vector<CaseSummary>& out,
                       bool parallel, std::optional<CaseIdRange> range = std::nullopt) {
  const CaseScope scope = range ? CaseScope::range : CaseScope::all;
  const std::int64_t first_id = range ? range->first : 0, last_id = range ? range->last : 0;
  std::vector<std::int64_t> ids;
  ids.reserve(out.size());
  for (const CaseSummary& s : out) ids.push_back(s.case_id);
  // Moves `at` to the case of a child row with case id `id`; false for a case not listed
  // (none, in a consistent file). Rows come in case order (per name, through
  // measurements_by_name): the case of the previous row and the one after it are tried first.
  auto find_case = [&ids](std::size_t& at, std::int64_t id) {
    if (at + 1 < ids.size() && ids[at] != id && ids[at + 1] == id) ++at;
    if (at < ids.size() && ids[at] == id) return true;
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it == ids.end() || *it != id) return false;
    at = static_cast<std::size_t>(it - ids.begin());
    return true;
  };
  // The rows of one child table, each read into the next row of its case's `rows_of(summary)`.
  // A summary may hold rows of the case a batch before it (for_each_case_batch refills its
  // summaries): they are written over, so their strings keep their buffers, and the rest dropped.
  // A case's first row reserves room for `expected` rows where their number is bounded: on the
  // pass's thread, whose malloc arena then reuses what the shrinking below frees, and with no
  // regrowth (a vector grown row by row holds up to twice its rows).
  auto each_row = [&](Statement& q, std::size_t expected, auto&& rows_of, auto&& read) {
    std::vector<std::uint32_t> filled(out.size(), 0);
    std::size_t at = 0;
    while (q.step()) {
      const std::int64_t id = q.int64(0);
      if (!find_case(at, id)) continue;
      auto& rows = rows_of(out[at]);
      if (filled[at] == rows.size()) {
        if (rows.capacity() == 0) rows.reserve(expected);
        rows.emplace_back();
      }
      read(rows[filled[at]++], id);
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      auto& rows = rows_of(out[i]);
      rows.resize(filled[i]);
      // A list that is kept (not refilled by a next batch) gives back what its growth reserved.
      if (!range) rows.shrink_to_fit();
    }
  };
  auto measurements_of = [](CaseSummary& s) -> std::vector<Measurement>& { return s.record.measurements; };
  auto stage_costs_of = [](CaseSummary& s) -> std::vector<StageCostRow>& { return s.record.stage_costs; };
  auto predictions_of = [](CaseSummary& s) -> std::vector<PredictionRow>& { return s.record.predictions; };
  auto quality_of = [](CaseSummary& s) -> std::vector<QualityRow>& { return s.record.quality; };
  auto artifacts_of = [](CaseSummary& s) -> std::vector<ArtifactInfo>& { return s.artifacts; };
  // What this detail does not read.
  for (CaseSummary& s : out) {
    if (!detail.stage_costs) s.record.stage_costs.clear();
    if (!detail.predictions) s.record.predictions.clear();
    if (!detail.quality) s.record.quality.clear();
    if (!detail.artifact_infos) s.artifacts.clear();
  }
  // Each pass fills its own members of every summary, so passes may run side by side.
  auto measurements = [&](sqlite3* c) {
    Statement q(c, path, measurement_sql(detail, scope));
    bind_names(q, detail.measurements, bind_scope(q, scope, first_id, last_id));
    if (const auto names = shared_measurement_names(detail)) {
      for (CaseSummary& s : out) {
        s.record.measurements.clear();
        reset_measurement_values(s.record.measurement_values, names);
      }
      std::size_t at = 0, name_at = 0;
      while (q.step())
        if (find_case(at, q.int64(0))) read_measurement_value(q, 1, out[at].record.measurement_values, name_at);
      return;
    }
    const std::size_t expected = detail.measurements ? detail.measurements->size() : 0;
    each_row(q, expected, measurements_of, [&](Measurement& m, std::int64_t) { read_measurement(q, 1, m); });
  };
  auto stage_costs_and_predictions = [&](sqlite3* c) {
    if (detail.stage_costs) {
      Statement q(c, path, stage_cost_sql(scope));
      bind_scope(q, scope, first_id, last_id);
      each_row(q, 0, stage_costs_of, [&](StageCostRow& r, std::int64_t id) { read_stage_cost(q, 1, r, id, path); });
      for (CaseSummary& s : out) s.has_stage_costs = !s.record.stage_costs.empty();
    } else {
      for (CaseSummary& s : out) s.has_stage_costs = false;
      if (detail.stage_cost_flags) {
        Statement q(c, path, stage_cost_case_sql(scope));
        bind_scope(q, scope, first_id, last_id);
        std::size_t at = 0;
        while (q.step())
          if (find_case(at, q.int64(0))) out[at].has_stage_costs = true;
      }
    }
    if (detail.predictions) {
      Statement q(c, path, prediction_sql(detail, scope));
      bind_scope(q, scope, first_id, last_id);
      each_row(q, 0, predictions_of, [&](PredictionRow& p, std::int64_t id) { read_prediction(q, 1, p, id, path); });
    }
  };
  auto quality_and_artifacts = [&](sqlite3* c) {
    if (detail.quality) {
      Statement q(c, path, quality_sql(detail, scope));
      bind_names(q, detail.quality_metrics, bind_scope(q, scope, first_id, last_id));
      const std::size_t expected = detail.quality_metrics ? detail.quality_metrics->size() : 0;
      each_row(q, expected, quality_of, [&](QualityRow& r, std::int64_t) { read_quality(q, 1, r); });
    }
    if (detail.artifact_infos) {
      // Through artifacts_listing when the file has it (ensure_read_indexes).
      Statement q(c, path, artifact_info_sql(detail, scope));
      bind_names(q, detail.artifact_names, bind_scope(q, scope, first_id, last_id));
      each_row(q, 0, artifacts_of, [&](ArtifactInfo& a, std::int64_t) { read_artifact_info(q, 1, a); });
    }
  };
  if (!parallel) {
    measurements(db);
    stage_costs_and_predictions(db);
    quality_and_artifacts(db);
  } else {
    std::exception_ptr failures[2];
    auto on_own_connection = [&](auto pass, std::exception_ptr& failure) {
      try {
        Connection c =
            open_connection(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, read_only_uri(path));
        configure_connection(c.get(), path, true);
        pass(c.get());
      } catch (...) {
        failure = std::current_exception();
      }
    };
    std::thread a(on_own_connection, stage_costs_and_predictions, std::ref(failures[0]));
    std::thread b(on_own_connection, quality_and_artifacts, std::ref(failures[1]));
    std::exception_ptr mine;
    try {
      measurements(db);
    } catch (...) {
      mine = std::current_exception();
    }
    a.join();
    b.join();
    for (const std::exception_ptr& e : {mine, failures[0], failures[1]})
      if (e) std::rethrow_exception(e);
  }
}

void insert_prediction(Statement& s, std::int64_t case_id, const PredictionRow& p) {
  s.reset();
  s.bind(1, case_id).bind(2, p.model).bind(3, p.ii_us).bind(4, p.limiting_stage).bind(5, p.limiting_agent);
  s.bind(6, p.overlap_efficiency).bind(7, p.detail_json);
  if (p.unknown_stages)
    s.bind(8, nlohmann::json(*p.unknown_stages).dump());
  else
    s.bind_null(8);
  s.run();
}

void insert_children(sqlite3* db, const std::string& path, std::int64_t case_id, const CaseRecord& rec) {
  {
    Statement s(db, path, "INSERT INTO measurements(case_id, name, value, unit) VALUES (?, ?, ?, ?)");
    for (const auto& m : rec.measurements) {
      s.reset();
      s.bind(1, case_id).bind(2, m.name).bind(3, m.value).bind(4, m.unit).run();
    }
  }
  {
    Statement s(db, path, "INSERT INTO stage_costs(case_id, stage, method, cost_us) VALUES (?, ?, ?, ?)");
    for (const auto& sc : rec.stage_costs) {
      s.reset();
      s.bind(1, case_id).bind(2, to_string(sc.stage)).bind(3, to_string(sc.method)).bind(4, sc.cost_us).run();
    }
  }
  {
    Statement s(db, path,
                "INSERT INTO predictions(case_id, model, ii_us, limiting_stage, limiting_agent, overlap_efficiency, "
                "detail_json, unknown_stages) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const auto& p : rec.predictions) insert_prediction(s, case_id, p);
  }
  {
    Statement s(
        db, path,
        "INSERT INTO quality(case_id, metric, value, threshold, passed, distribution) VALUES (?, ?, ?, ?, ?, ?)");
    for (const auto& q : rec.quality) {
      s.reset();
      s.bind(1, case_id).bind(2, q.metric).bind(3, q.value).bind(4, q.threshold).bind(5, q.passed);
      s.bind(6, q.distribution).run();
    }
  }
  {
    Statement s(db, path, "INSERT INTO artifacts(case_id, name, mime, size, sha256, data) VALUES (?, ?, ?, ?, ?, ?)");
    for (const auto& a : rec.artifacts) {
      s.reset();
      s.bind(1, case_id).bind(2, a.name).bind(3, a.mime).bind(4, static_cast<std::int64_t>(a.data.size()));
      s.bind(5, sha256_hex(a.data)).bind_blob(6, a.data).run();
    }
  }
}

RunInfo read_run_columns(const Statement& q) {
  RunInfo r;
  r.id = q.int64(0);
  r.uuid = q.text(1);
  r.started_at = q.text(2);
  r.finished_at = q.text(3);
  r.tool_version = q.text(4);
  r.git_revision = q.text(5);
  r.host = q.text(6);
  r.backend = q.text(7);
  r.backend_version = q.text(8);
  r.device = q.text(9);
  r.command = q.text(10);
  r.notes = q.text(11);
  r.device_index = q.integer(12, -1);
  r.device_uid = q.text(13);
  return r;
}

// The runs columns read_run_columns reads; a file before v8 (read as it is) has no device
// index or uid, which read as not recorded.
std::string run_columns(sqlite3* db, const std::string& path) {
  return std::string(
             "id, uuid, started_at, finished_at, tool_version, git_revision, host, backend, backend_version, "
             "device, command, notes, ") +
         (has_column(db, path, "main", "runs", "device_index") ? "device_index, device_uid" : "NULL, ''");
}

// ---------------------------------------------------------------- copying between files

// Columns of `table` in schema `db_name` except the ones listed (ids that get remapped).
std::vector<std::string> columns_except(sqlite3* db, const std::string& path, const std::string& db_name,
                                        const std::string& table, const std::vector<std::string>& skip) {
  Statement q(db, path, "PRAGMA " + db_name + ".table_info(" + table + ")");
  std::vector<std::string> cols;
  while (q.step()) {
    std::string name = q.text(1);
    if (std::find(skip.begin(), skip.end(), name) == skip.end()) cols.push_back(name);
  }
  return cols;
}

std::string join(const std::vector<std::string>& v, const std::string& prefix = "") {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + prefix + v[i];
  return s;
}

// Attaches another file as schema "src" for the lifetime of the object.
class AttachedSource {
 public:
  AttachedSource(sqlite3* db, const std::string& path, const std::string& source_path) : db_(db) {
    Statement s(db, path, "ATTACH DATABASE ? AS src");
    s.bind(1, read_only_uri(source_path)).run();
  }
  ~AttachedSource() { sqlite3_exec(db_, "DETACH DATABASE src", nullptr, nullptr, nullptr); }
  AttachedSource(const AttachedSource&) = delete;
  AttachedSource& operator=(const AttachedSource&) = delete;

 private:
  sqlite3* db_;
};

// What identifies a stored case's result when the same (run UUID, case key) arrives
// twice: its status, message, finish time and every measurement. Equal fingerprints are
// the same case copied twice (an earlier merge); unequal ones are a conflict.
std::string case_fingerprint(sqlite3* db, const std::string& path, const std::string& schema, std::int64_t case_id) {
  Statement q(db, path,
              "SELECT c.status || '|' || c.message || '|' || coalesce(c.finished_at, '') || '|' || "
              "coalesce((SELECT group_concat(m.name || '=' || quote(m.value), ';') FROM (SELECT name, value FROM " +
                  schema + ".measurements WHERE case_id = c.id ORDER BY name, id) m), '') FROM " + schema +
                  ".cases c WHERE c.id = ?");
  q.bind(1, case_id);
  return q.step() ? q.text(0) : std::string();
}

// Copies runs (and their cases with every child row) from attached "src" into main,
// remapping ids. A run is identified by its UUID: one main already has receives the
// source's cases it lacks, by case key (two filtered exports of one run merge into the
// whole run); a case key both hold is skipped when the results are the same and
// reported as a conflict when they differ (main's is kept). With a filter, only
// matching runs/cases are copied. Caller holds the transaction.
MergeResult copy_runs_from_src(sqlite3* db, const std::string& path, const CaseFilter* filter) {
  const SqlFilter sql_filter = filter ? build_filter(*filter, case_mma_column(db, path, "src")) : SqlFilter{};
  MergeResult result;

  // Runs to copy: those matching the run-level terms and, when the filter has
  // case-level terms, owning at least one matching case.
  std::string run_sql = "SELECT r.id, r.uuid FROM src.runs r WHERE 1";
  if (sql_filter.has_case_terms)
    run_sql += " AND EXISTS (SELECT 1 FROM src.cases c WHERE c.run_id = r.id" + sql_filter.where + ")";
  else
    run_sql += sql_filter.where;
  run_sql += " ORDER BY r.id";
  std::vector<std::pair<std::int64_t, std::string>> runs;
  {
    Statement q(db, path, run_sql);
    sql_filter.bind(q, 1);
    while (q.step()) runs.emplace_back(q.int64(0), q.text(1));
  }

  const auto run_cols = columns_except(db, path, "src", "runs", {"id"});
  const auto case_cols = columns_except(db, path, "src", "cases", {"id", "run_id"});
  Statement insert_run(
      db, path,
      "INSERT INTO main.runs(" + join(run_cols) + ") SELECT " + join(run_cols) + " FROM src.runs WHERE id = ?");
  Statement insert_case(db, path,
                        "INSERT INTO main.cases(run_id, " + join(case_cols) + ") SELECT ?, " + join(case_cols) +
                            " FROM src.cases WHERE id = ?");
  Statement find_run(db, path, "SELECT id FROM main.runs WHERE uuid = ?");
  Statement find_case(db, path, "SELECT id FROM main.cases WHERE run_id = ? AND case_key = ?");
  std::vector<std::unique_ptr<Statement>> insert_children;
  for (const auto& table : store::tilepath_tables()) {
    if (table == "runs" || table == "cases") continue;
    const auto cols = columns_except(db, path, "src", table, {"id", "case_id"});
    insert_children.push_back(std::make_unique<Statement>(db, path,
                                                          "INSERT INTO main." + table + "(case_id, " + join(cols) +
                                                              ") SELECT ?, " + join(cols) + " FROM src." + table +
                                                              " WHERE case_id = ? ORDER BY id"));
  }

  for (const auto& [src_run, uuid] : runs) {
    std::int64_t dst_run = 0;
    find_run.reset();
    find_run.bind(1, uuid);
    const bool known_run = find_run.step();
    if (known_run) {
      dst_run = find_run.int64(0);
    } else {
      insert_run.reset();
      insert_run.bind(1, src_run).run();
      dst_run = sqlite3_last_insert_rowid(db);
      ++result.runs_added;
    }

    std::vector<std::pair<std::int64_t, std::string>> cases;
    {
      Statement q(db, path,
                  "SELECT c.id, c.case_key FROM src.cases c JOIN src.runs r ON r.id = c.run_id WHERE c.run_id = ?" +
                      sql_filter.where + " ORDER BY c.id");
      q.bind(1, src_run);
      sql_filter.bind(q, 2);
      while (q.step()) cases.emplace_back(q.int64(0), q.text(1));
    }
    for (const auto& [src_case, key] : cases) {
      if (known_run) {
        find_case.reset();
        find_case.bind(1, dst_run).bind(2, key);
        if (find_case.step()) {
          if (case_fingerprint(db, path, "main", find_case.int64(0)) == case_fingerprint(db, path, "src", src_case))
            ++result.cases_present;
          else
            result.conflicts.push_back("run " + uuid + ", case " + key +
                                       ": the files hold different results; the target's is kept");
          continue;
        }
      }
      insert_case.reset();
      insert_case.bind(1, dst_run).bind(2, src_case).run();
      const std::int64_t dst_case = sqlite3_last_insert_rowid(db);
      for (auto& child : insert_children) {
        child->reset();
        child->bind(1, dst_case).bind(2, src_case).run();
      }
      ++result.cases_added;
    }
  }
  return result;
}

// MergeMode::replace: deletes the main cases that src measured again (the same backend, device
// and case key, in a run of another UUID) with their child rows, and appends to each main run
// that lost cases how many, to which run and from which file (source_name). Returns the count.
int remove_cases_measured_again(sqlite3* db, const std::string& path, const std::string& source_name) {
  const std::string measured_again =
      "FROM main.cases mc JOIN main.runs mr ON mr.id = mc.run_id JOIN src.cases sc ON sc.case_key = mc.case_key "
      "JOIN src.runs sr ON sr.id = sc.run_id WHERE sr.backend = mr.backend AND sr.device = mr.device "
      "AND sr.uuid != mr.uuid";
  std::vector<std::tuple<std::int64_t, std::string, int>> losses;  // main run, replacing run's UUID, cases
  {
    Statement q(db, path,
                "SELECT mr.id, sr.uuid, count(DISTINCT mc.id) " + measured_again +
                    " GROUP BY mr.id, sr.uuid ORDER BY mr.id, sr.uuid");
    while (q.step()) losses.emplace_back(q.int64(0), q.text(1), static_cast<int>(q.int64(2)));
  }
  if (losses.empty()) return 0;
  Statement append_note(db, path,
                        "UPDATE main.runs SET notes = notes || CASE WHEN notes = '' THEN '' ELSE ' ' END || ? "
                        "WHERE id = ?");
  for (const auto& [run, uuid, count] : losses) {
    const std::string note = "[" + std::to_string(count) + (count == 1 ? " case" : " cases") + " replaced by run " +
                             uuid + " of " + source_name + "]";
    append_note.reset();
    append_note.bind(1, note).bind(2, run).run();
  }
  Statement remove(db, path, "DELETE FROM main.cases WHERE id IN (SELECT mc.id " + measured_again + ")");
  remove.run();
  return sqlite3_changes(db);
}

void remove_database_files(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
}

// Writes a new database at out_path through `fill` (given a fresh store), via a
// temporary file so a failure never leaves a half-written output behind.
// Partial files `<out>.partial-<pid>` (and their -wal/-shm/-journal) whose process no
// longer exists: left by an export or merge that was killed. Removed before a new one
// starts, so kills never pile up half-written copies.
void remove_stale_partials(const std::string& out_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path out = fs::absolute(out_path, ec);
  const std::string prefix = out.filename().string() + ".partial-";
  for (const fs::directory_entry& entry : fs::directory_iterator(out.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::string digits = name.substr(prefix.size());
    for (const char* suffix : {"-wal", "-shm", "-journal"})
      if (digits.size() > std::strlen(suffix) && digits.ends_with(suffix))
        digits.resize(digits.size() - std::strlen(suffix));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    fs::remove(entry.path(), ec);
  }
}

template <class Fill>
void create_new_database(const std::string& out_path, Fill&& fill) {
  if (std::filesystem::exists(out_path)) throw StoreError(out_path + ": already exists; refusing to overwrite it");
  remove_stale_partials(out_path);
  const std::string tmp = out_path + ".partial-" + std::to_string(::getpid());
  remove_database_files(tmp);
  try {
    {
      RunStore out = RunStore::open(tmp);
      fill(out);
    }  // closing checkpoints the WAL into the file and removes -wal/-shm
    if (std::filesystem::exists(out_path)) throw StoreError(out_path + ": already exists; refusing to overwrite it");
    std::filesystem::rename(tmp, out_path);
  } catch (const StoreError& e) {
    remove_database_files(tmp);
    // The temporary name means nothing to the user: name the output they asked for.
    std::string what = e.what();
    for (std::size_t at = what.find(tmp); at != std::string::npos; at = what.find(tmp, at + out_path.size()))
      what.replace(at, tmp.size(), out_path);
    throw StoreError(what);
  } catch (...) {
    remove_database_files(tmp);
    throw;
  }
}

}  // namespace

// ---------------------------------------------------------------- CaseStatus / CaseRecord

std::string_view to_string(CaseStatus s) {
  switch (s) {
    case CaseStatus::ok:
      return "ok";
    case CaseStatus::failed:
      return "failed";
    case CaseStatus::unsupported:
      return "unsupported";
    case CaseStatus::error:
      return "error";
    case CaseStatus::cancelled:
      return "cancelled";
  }
  return "error";
}

CaseStatus parse_case_status(std::string_view s) {
  for (CaseStatus v :
       {CaseStatus::ok, CaseStatus::failed, CaseStatus::unsupported, CaseStatus::error, CaseStatus::cancelled})
    if (to_string(v) == s) return v;
  throw StoreError("status: unknown value '" + std::string(s) +
                   "'; allowed: ok, failed, unsupported, error, cancelled");
}

std::optional<double> MeasurementValues::value(std::string_view name) const {
  if (!names) return std::nullopt;
  for (std::size_t i = 0; i < names->size() && i < values.size(); ++i)
    if ((*names)[i] == name) return values[i];
  return std::nullopt;
}

std::optional<double> CaseRecord::measurement(std::string_view name) const {
  for (const auto& m : measurements)
    if (m.name == name) return m.value;
  return measurement_values.value(name);
}

// ---------------------------------------------------------------- RunStore lifecycle

RunStore::RunStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

RunStore::RunStore(RunStore&& o) noexcept : db_(o.db_), path_(std::move(o.path_)), heartbeat_(std::move(o.heartbeat_)) {
  o.db_ = nullptr;
}

namespace {

// WAL while the store is open (crash safety, readers beside a writer); back to a
// rollback journal at rest, so that later read-only opens (report, export, merge
// inputs, a read-only bundled copy) need no -wal/-shm files and leave none behind.
// Fails harmlessly (SQLITE_BUSY) while another connection still has the file open:
// the last writer to close switches it.
void close_store(sqlite3* db) {
  if (db == nullptr) return;
  if (sqlite3_db_readonly(db, "main") == 0) sqlite3_exec(db, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr);
  sqlite3_close_v2(db);
}

}  // namespace

RunStore& RunStore::operator=(RunStore&& o) noexcept {
  if (this != &o) {
    stop_heartbeat();
    close_store(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    heartbeat_ = std::move(o.heartbeat_);
    o.db_ = nullptr;
  }
  return *this;
}

// The heartbeat's connection closes first, so that this one is the last and can switch
// the file back to its rollback journal (close_store).
RunStore::~RunStore() {
  stop_heartbeat();
  close_store(db_);
}

void RunStore::stop_heartbeat() {
  // A forked child holds the parent's heartbeat without its thread: joining or closing
  // its connection there would be undefined, so the child leaves the object be.
  if (heartbeat_ && heartbeat_->pid() != getpid()) (void)heartbeat_.release();
  heartbeat_.reset();
}

void RunStore::keep_claims_alive(const std::string& host, std::int64_t pid) {
  if (heartbeat_ && heartbeat_->pid() == pid) return;
  stop_heartbeat();
  try {
    heartbeat_ =
        std::make_unique<store::ClaimHeartbeat>(path_, host, pid, std::chrono::milliseconds(g_lock_wait_ms.load()));
  } catch (const std::system_error&) {
    // No thread to be had now: the claim holds on this host all the same, and the next
    // claim tries again.
  }
}

void RunStore::set_claim_heartbeat_interval(std::chrono::milliseconds interval) {
  store::set_claim_heartbeat_interval(interval);
}

int RunStore::current_schema_version() { return store::kCurrentSchemaVersion; }

int RunStore::oldest_schema_read_as_is() { return store::kOldestSchemaReadAsIs; }

void RunStore::set_lock_wait(std::chrono::milliseconds wait) {
  g_lock_wait_ms.store(static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, wait.count())));
}

int RunStore::file_schema_version(const std::string& path) {
  const Inspection info = inspect_file(path);
  if (info.state == FileState::absent_or_empty) throw StoreError(path + ": no such database (missing or empty file)");
  if (info.state == FileState::fresh_sqlite) not_tilepath(path, "empty SQLite file without tilepath schema");
  return info.user_version;
}

namespace {

// A damaged file must not be written into (a write can spread the damage or bury it):
// SQLite's quick_check walks every b-tree page, read-only, before a writer touches it.
// (Damage inside a large value's overflow pages is not seen here; loading an artifact
// checks its sha256 for that.)
void refuse_damaged(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) store::throw_sqlite(raw, path, "open", rc);
  sqlite3_busy_timeout(raw, g_lock_wait_ms.load());
  std::string verdict;
  try {
    Statement check(raw, path, "PRAGMA quick_check(1)");
    if (check.step()) verdict = check.text(0);
  } catch (const StoreError& e) {
    verdict = e.what();
  }
  if (verdict != "ok")
    throw StoreError(path + ": damaged (" + printable_text(verdict) +
                     "); refusing to write into it. Read what is still readable " + "with `tilepath export --db " +
                     path + " --out COPY.sqlite`, or restore a backup");
}

}  // namespace

namespace {

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A process on this host that still runs (EPERM: it exists but is another user's). A
// zombie does not: a killed sweep's worker can stay one where nothing reaps orphans (a
// container whose PID 1 does not).
bool process_exists(std::int64_t pid) {
  if (pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');  // the state follows "pid (comm) "
  if (close == std::string::npos || close + 2 >= text.size()) return true;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace

namespace {

// Covering indexes for reading a few columns of every case (report, the GUI's lists):
// the measurements of a few names without a pass over all of them (~60 a case), the
// artifacts' names and sizes without reading past their bytes (sha256 is stored after
// the blob), and the predictions without their detail_json (~1.5 KB a row, most of the
// table's pages: 160 MB in a file of 100k cases). Not a schema step: readers
// use them when present and are correct without them; read-only opens cannot create
// them, so a file gets them the first time something writes into it (`tilepath db
// upgrade` is enough).
constexpr const char* kReadIndexNames = "'measurements_by_name', 'artifacts_listing', 'predictions_listing'";
constexpr int kReadIndexCount = 3;

void ensure_read_indexes(sqlite3* db, const std::string& path) {
  static constexpr const char* kCreate =
      "CREATE INDEX IF NOT EXISTS measurements_by_name ON measurements(name, case_id, value, unit);"
      "CREATE INDEX IF NOT EXISTS artifacts_listing ON artifacts(case_id, id, name, mime, size, sha256);"
      "CREATE INDEX IF NOT EXISTS predictions_listing ON predictions(case_id, id, ii_us, limiting_stage, "
      "limiting_agent, overlap_efficiency, model, unknown_stages);";
  {
    Statement q(
        db, path,
        std::string("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN (") + kReadIndexNames + ")");
    q.step();
    if (q.int64(0) == kReadIndexCount) return;  // no write lock for files that have them
  }  // the read ends here: SQLite does not wait for a write lock asked for inside a read
  Transaction tx(db, path);
  exec(db, path, kCreate);
  tx.commit();
}

}  // namespace

RunStore RunStore::open(const std::string& path) {
  // throws, without writing, for files we must not touch
  if (inspect_file(path).state == FileState::tilepath) refuse_damaged(path);
  Connection db = open_connection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI);
  configure_connection(db.get(), path, false);
  store::migrate_to_current(db.get(), path);
  ensure_read_indexes(db.get(), path);
  RunStore store(db.release(), path);
  store.finish_interrupted_runs();
  return store;
}

// Runs left open by a process of this host that is gone (killed mid-sweep): finished now,
// their notes saying so, so that they do not pile up looking as if they still ran.
void RunStore::finish_interrupted_runs() {
  std::vector<std::pair<std::int64_t, std::int64_t>> gone;  // run id, owner pid
  {
    Statement q(
        db_, path_,
        "SELECT id, owner_pid FROM runs WHERE finished_at IS NULL AND owner_pid IS NOT NULL AND owner_host = ?");
    q.bind(1, this_host());
    while (q.step())
      if (!process_exists(q.int64(1))) gone.emplace_back(q.int64(0), q.int64(1));
  }
  if (gone.empty()) return;
  Transaction tx(db_, path_);
  Statement w(db_, path_,
              "UPDATE runs SET finished_at = ?, notes = trim(notes || ' (interrupted: process ' || ? || ' ended "
              "before it finished the run)') WHERE id = ? AND finished_at IS NULL");
  for (const auto& [id, pid] : gone) {
    w.reset();
    w.bind(1, now_iso8601_utc()).bind(2, pid).bind(3, id).run();
  }
  tx.commit();
}

RunStore RunStore::open_read_only(const std::string& path) {
  const Inspection info = inspect_file(path);
  if (info.state == FileState::absent_or_empty) throw StoreError(path + ": no such database (missing or empty file)");
  if (info.state == FileState::fresh_sqlite) not_tilepath(path, "empty SQLite file without tilepath schema");
  if (info.user_version < store::kOldestSchemaReadAsIs)
    throw StoreError(path + ": schema version " + std::to_string(info.user_version) + " is older than current (" +
                     std::to_string(store::kCurrentSchemaVersion) + "); run `tilepath db upgrade " + path +
                     "` to upgrade it (opening it read-write with any command that writes to it does the same)");
  // NOMUTEX: a reader's connection is used by one thread at a time (the GUI's loader has
  // its own), and SQLite's per-call locking is a measurable share of reading 100k cases.
  Connection db =
      open_connection(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, read_only_uri(path));
  configure_connection(db.get(), path, true);
  return RunStore(db.release(), path);
}

int RunStore::schema_version() const { return store::read_user_version(db_, path_); }

// ---------------------------------------------------------------- writing

std::int64_t RunStore::begin_run(RunInfo& run) {
  if (run.uuid.empty()) run.uuid = random_uuid_v4();
  if (run.started_at.empty()) run.started_at = now_iso8601_utc();
  Transaction tx(db_, path_);
  Statement s(
      db_, path_,
      "INSERT INTO runs(uuid, started_at, finished_at, tool_version, git_revision, host, backend, "
      "backend_version, device, command, notes, owner_host, owner_pid, device_index, device_uid) VALUES (?, ?, ?, ?, "
      "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, run.uuid).bind(2, run.started_at);
  if (run.finished_at.empty())
    s.bind_null(3);
  else
    s.bind(3, run.finished_at);
  s.bind(4, run.tool_version).bind(5, run.git_revision).bind(6, run.host).bind(7, run.backend);
  s.bind(8, run.backend_version).bind(9, run.device).bind(10, run.command).bind(11, run.notes);
  s.bind(12, this_host()).bind(13, std::int64_t(getpid()));
  if (run.device_index < 0)
    s.bind_null(14);
  else
    s.bind(14, std::int64_t(run.device_index));
  s.bind(15, run.device_uid);
  try {
    s.run();
  } catch (const StoreError&) {
    if ((sqlite3_extended_errcode(db_) & 0xff) == SQLITE_CONSTRAINT)
      throw StoreError(path_ + ": a run with uuid " + run.uuid + " is already stored");
    throw;
  }
  run.id = sqlite3_last_insert_rowid(db_);
  tx.commit();
  return run.id;
}

std::int64_t RunStore::add_case(std::int64_t run_id, CaseRecord& rec) { return insert_case(run_id, rec, false); }

std::int64_t RunStore::add_case_unless_stored(std::int64_t run_id, CaseRecord& rec) {
  return insert_case(run_id, rec, true);
}

std::int64_t RunStore::insert_case(std::int64_t run_id, CaseRecord& rec, bool unless_stored) {
  if (rec.case_key.empty()) rec.case_key = rec.op.key();
  if (rec.finished_at.empty()) rec.finished_at = now_iso8601_utc();

  // One transaction per case: a crash loses at most the case being written.
  Transaction tx(db_, path_);
  {
    Statement run(db_, path_, "SELECT backend, device FROM runs WHERE id = ?");
    run.bind(1, run_id);
    if (!run.step()) throw StoreError(path_ + ": add_case: no run with id " + std::to_string(run_id));
    // Inside the write transaction, so no other writer can store the key in between.
    if (unless_stored && has_case(run.text(0), run.text(1), rec.case_key)) return 0;
    // Stored, the case needs its claim no more (whoever held it).
    Statement unclaim(db_, path_, "DELETE FROM claims WHERE backend = ? AND device = ? AND case_key = ?");
    unclaim.bind(1, run.text(0)).bind(2, run.text(1)).bind(3, rec.case_key).run();
  }
  {
    Statement dup(db_, path_, "SELECT id FROM cases WHERE run_id = ? AND case_key = ?");
    dup.bind(1, run_id).bind(2, rec.case_key);
    if (dup.step())
      throw StoreError(path_ + ": case_key '" + rec.case_key + "' is already stored in run " + std::to_string(run_id) +
                       " (case " + std::to_string(dup.int64(0)) + ")");
  }
  Statement s(db_, path_,
              "INSERT INTO cases(run_id, case_key, status, message, finished_at, batch, context, context_lengths, "
              "q_heads, kv_heads, head_dim, page_size, kv, k_path, mode, k_repr, rope, scale, cache, splits, "
              "kernel_name, cubin_sha256, regs_per_thread, smem_static_bytes, smem_dynamic_bytes, "
              "occupancy_theoretical, occupancy_achieved, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
              "splits_used, mma) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
              "?, ?, ?, ?, ?, ?, ?, ?, ?)");
  const OperatingPoint& op = rec.op;
  const KernelMeta& k = rec.kernel;
  s.add(run_id).add(rec.case_key).add(to_string(rec.status)).add(rec.message).add(rec.finished_at);
  s.add(op.batch).add(op.context).add(context_lengths_json(op.context_lengths));
  s.add(op.q_heads).add(op.kv_heads).add(op.head_dim).add(op.page_size);
  s.add(to_string(op.kv)).add(to_string(op.k_path)).add(to_string(op.mode)).add(to_string(op.k_repr));
  s.add(to_string(op.rope)).add(to_string(op.scale)).add(to_string(op.cache)).add(op.splits);
  s.add(k.kernel_name).add(k.cubin_sha256);
  // -1 means "not reported by the backend": stored as NULL.
  s.add_or_null(k.regs_per_thread, -1).add_or_null(k.smem_static_bytes, -1).add_or_null(k.smem_dynamic_bytes, -1);
  s.add(k.occupancy_theoretical).add(k.occupancy_achieved);
  for (int g : k.grid) s.add(g);
  for (int b : k.block) s.add(b);
  s.add(k.splits);
  s.add(to_string(op.mma));
  s.run();
  const std::int64_t case_id = sqlite3_last_insert_rowid(db_);
  insert_children(db_, path_, case_id, rec);
  tx.commit();

  rec.id = case_id;
  rec.run_id = run_id;
  return case_id;
}

AnnotationResult RunStore::annotate_case(std::int64_t case_id, const CaseAnnotation& a) {
  const std::string where = path_ + ": case " + std::to_string(case_id);
  for (const Artifact& art : a.artifacts)
    if (art.name.empty()) throw StoreError(where + ": an artifact needs a name");
  for (const Measurement& m : a.measurements)
    if (m.name.empty()) throw StoreError(where + ": a measurement needs a name");
  if (a.occupancy_achieved && std::isfinite(*a.occupancy_achieved) &&
      (*a.occupancy_achieved < 0.0 || *a.occupancy_achieved > 1.0))
    throw StoreError(where + ": occupancy_achieved " + std::to_string(*a.occupancy_achieved) +
                     " is not a fraction 0..1");

  AnnotationResult result;
  // One transaction: the artifact and the numbers read from it land together or not at all.
  Transaction tx(db_, path_);
  {
    Statement exists(db_, path_, "SELECT 1 FROM cases WHERE id = ?");
    exists.bind(1, case_id);
    if (!exists.step()) throw StoreError(path_ + ": no case with id " + std::to_string(case_id));
  }
  {
    Statement old(db_, path_,
                  "SELECT name, mime, size, sha256 FROM artifacts WHERE case_id = ? AND name = ? ORDER BY id");
    Statement drop(db_, path_, "DELETE FROM artifacts WHERE case_id = ? AND name = ?");
    for (const Artifact& art : a.artifacts) {
      old.reset();
      old.bind(1, case_id).bind(2, art.name);
      while (old.step()) result.replaced_artifacts.push_back({old.text(0), old.text(1), old.int64(2), old.text(3)});
      drop.reset();
      drop.bind(1, case_id).bind(2, art.name).run();
    }
  }
  {
    Statement drop(db_, path_, "DELETE FROM measurements WHERE case_id = ? AND name = ?");
    for (const Measurement& m : a.measurements) {
      drop.reset();
      drop.bind(1, case_id).bind(2, m.name).run();
      if (sqlite3_changes(db_) > 0) result.replaced_measurements.push_back(m.name);
    }
  }
  if (a.occupancy_achieved) {
    Statement s(db_, path_, "UPDATE cases SET occupancy_achieved = ? WHERE id = ?");
    s.bind(1, *a.occupancy_achieved).bind(2, case_id).run();
  }
  CaseRecord children;
  children.measurements = a.measurements;
  children.artifacts = a.artifacts;
  insert_children(db_, path_, case_id, children);
  tx.commit();
  return result;
}

AnnotationResult RunStore::add_artifact(std::int64_t case_id, const Artifact& artifact) {
  CaseAnnotation a;
  a.artifacts.push_back(artifact);
  return annotate_case(case_id, a);
}

void RunStore::replace_predictions(const std::vector<CasePredictions>& cases) {
  Transaction tx(db_, path_);
  Statement exists(db_, path_, "SELECT 1 FROM cases WHERE id = ?");
  Statement drop(db_, path_, "DELETE FROM predictions WHERE case_id = ?");
  Statement insert(db_, path_,
                   "INSERT INTO predictions(case_id, model, ii_us, limiting_stage, limiting_agent, overlap_efficiency, "
                   "detail_json, unknown_stages) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  for (const CasePredictions& c : cases) {
    exists.reset();
    exists.bind(1, c.case_id);
    if (!exists.step()) throw StoreError(path_ + ": no case with id " + std::to_string(c.case_id));
    drop.reset();
    drop.bind(1, c.case_id).run();
    for (const PredictionRow& p : c.predictions) insert_prediction(insert, c.case_id, p);
  }
  tx.commit();
}

void RunStore::finish_run(std::int64_t run_id) {
  Transaction tx(db_, path_);
  Statement s(db_, path_, "UPDATE runs SET finished_at = ? WHERE id = ?");
  s.bind(1, now_iso8601_utc()).bind(2, run_id).run();
  if (sqlite3_changes(db_) != 1) throw StoreError(path_ + ": finish_run: no run with id " + std::to_string(run_id));
  tx.commit();
}

// ---------------------------------------------------------------- reading

std::vector<RunInfo> RunStore::runs() const {
  Statement q(db_, path_, "SELECT " + run_columns(db_, path_) + " FROM runs ORDER BY id");
  std::vector<RunInfo> out;
  while (q.step()) out.push_back(read_run_columns(q));
  return out;
}

std::optional<RunInfo> RunStore::run(std::int64_t run_id) const {
  Statement q(db_, path_, "SELECT " + run_columns(db_, path_) + " FROM runs WHERE id = ?");
  q.bind(1, run_id);
  if (!q.step()) return std::nullopt;
  return read_run_columns(q);
}

namespace {

// A read transaction for the life of a listing, so that the list and the child rows come from
// one snapshot even while a sweep in another process keeps committing cases. None when a
// transaction is open already (one a caller began on handle()).
class ReadSnapshot {
 public:
  ReadSnapshot(sqlite3* db, const std::string& path) : db_(db), own_(sqlite3_get_autocommit(db) != 0) {
    if (own_) exec(db_, path, "BEGIN");
  }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;
  ~ReadSnapshot() {
    if (own_) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  bool owned() const { return own_; }

 private:
  sqlite3* db_;
  bool own_;
};

// The case and run columns of the cases `f` lists, in id order; within `range` when given.
// Into `out`, written over the summaries it holds (their strings keep their buffers); more
// are added as needed and those left over dropped.
void read_case_list(sqlite3* db, const std::string& path, const SqlFilter& f, const CaseDetail& detail,
                    std::optional<CaseIdRange> range, std::vector<CaseSummary>& out) {
  std::string columns = case_columns(db, path);
  if (!detail.case_texts)
    for (const std::string column : {"c.message", "c.finished_at", "c.cubin_sha256"})
      columns.replace(columns.find(column), column.size(), "''");
  Statement q(db, path,
              "SELECT " + columns + (detail.case_texts ? ", r.uuid" : ", ''") + ", r.backend, r.device, " +
                  (has_column(db, path, "main", "runs", "device_uid") ? "r.device_uid" : "''") +
                  " FROM cases c JOIN runs r ON r.id = c.run_id WHERE 1" + f.where +
                  (range ? " AND c.id BETWEEN ? AND ?" : "") + " ORDER BY c.id");
  const int next = f.bind(q, 1);
  if (range) q.bind(next, range->first).bind(next + 1, range->last);
  std::size_t listed = 0;
  while (q.step()) {
    if (listed == out.size()) out.emplace_back();
    CaseSummary& s = out[listed++];
    int c = 0;
    read_case_columns(q, path, c, s.record);
    q.text_to(c++, s.run_uuid);
    q.text_to(c++, s.backend);
    q.text_to(c++, s.device);
    q.text_to(c++, s.device_uid);
    s.case_id = s.record.id;
    s.run_id = s.record.run_id;
  }
  out.resize(listed);
}

}  // namespace

int RunCaseCounts::cases() const {
  int n = 0;
  for (int c : cases_by_status) n += c;
  return n;
}

std::vector<RunCaseCounts> RunStore::run_case_counts(const CaseFilter& filter) const {
  const SqlFilter sql_filter = build_filter(filter, case_mma_column(db_, path_));
  ReadSnapshot snapshot(db_, path_);
  std::map<std::int64_t, std::array<int, kCaseStatusCount>> counts;
  {
    Statement q(db_, path_,
                "SELECT r.id, c.status, count(*) FROM cases c JOIN runs r ON r.id = c.run_id WHERE 1" +
                    sql_filter.where + " GROUP BY r.id, c.status");
    sql_filter.bind(q, 1);
    while (q.step())
      counts[q.int64(0)][static_cast<std::size_t>(parse_case_status(q.text(1)))] = static_cast<int>(q.int64(2));
  }
  std::vector<RunCaseCounts> out;
  for (RunInfo& run : runs()) {
    if ((filter.run_id && run.id != *filter.run_id) || (filter.backend && run.backend != *filter.backend) ||
        (filter.device && run.device != *filter.device))
      continue;
    const auto found = counts.find(run.id);
    if (sql_filter.has_case_terms && found == counts.end()) continue;
    RunCaseCounts summary{std::move(run), {}};
    if (found != counts.end()) summary.cases_by_status = found->second;
    out.push_back(std::move(summary));
  }
  return out;
}

std::vector<CaseSummary> RunStore::cases(const CaseFilter& filter, const CaseDetail& detail) const {
  const SqlFilter f = build_filter(filter, case_mma_column(db_, path_));
  const ReadSnapshot snapshot(db_, path_);
  std::vector<CaseSummary> out;
  if (f.values.empty()) out.reserve(static_cast<std::size_t>(case_count()));  // no regrowth of 100k summaries
  read_case_list(db_, path_, f, detail, std::nullopt, out);
  // Every case: a pass over each child table. A subset: the rows of each of its cases.
  if (f.values.empty()) {
    // Threads pay for themselves on large lists only, and other connections would not see
    // what a caller's own open transaction wrote.
    constexpr std::size_t kParallelFrom = 20000;
    const bool parallel = snapshot.owned() && sqlite3_db_readonly(db_, "main") == 1 && out.size() >= kParallelFrom;
    load_all_children(db_, path_, detail, out, parallel);
    return out;
  }
  ChildRowLoader children(db_, path_, detail);
  for (auto& s : out) {
    children.load(s.record, false);
    s.has_stage_costs = detail.stage_costs ? !s.record.stage_costs.empty()
                                           : detail.stage_cost_flags && children.has_stage_costs(s.case_id);
    if (detail.artifact_infos) s.artifacts = children.artifact_infos(s.case_id);
  }
  return out;
}

void RunStore::for_each_case_batch(const CaseFilter& filter, const CaseDetail& detail, std::size_t batch_size,
                                   const std::function<void(std::vector<CaseSummary>&)>& visit) const {
  const SqlFilter f = build_filter(filter, case_mma_column(db_, path_));
  const ReadSnapshot snapshot(db_, path_);
  std::vector<std::int64_t> ids;
  {
    Statement q(db_, path_,
                "SELECT c.id FROM cases c JOIN runs r ON r.id = c.run_id WHERE 1" + f.where + " ORDER BY c.id");
    f.bind(q, 1);
    while (q.step()) ids.push_back(q.int64(0));
  }
  batch_size = std::max<std::size_t>(batch_size, 1);
  // A batch is the listed cases of an id range; their child rows are the range's rows,
  // those of cases the filter leaves out skipped.
  // One batch's summaries are refilled by the next: the strings of 100k cases are not each
  // allocated and freed.
  std::vector<CaseSummary> batch;
  batch.reserve(std::min(batch_size, ids.size()));
  for (std::size_t first = 0; first < ids.size(); first += batch_size) {
    const CaseIdRange range{ids[first], ids[std::min(first + batch_size, ids.size()) - 1]};
    read_case_list(db_, path_, f, detail, range, batch);
    load_all_children(db_, path_, detail, batch, false, range);
    visit(batch);
  }
}

CaseRecord RunStore::load_case(std::int64_t case_id, bool with_artifacts) const {
  Statement q(db_, path_, "SELECT " + case_columns(db_, path_) + " FROM cases c WHERE c.id = ?");
  q.bind(1, case_id);
  if (!q.step()) throw StoreError(path_ + ": no case with id " + std::to_string(case_id));
  int first_column = 0;
  CaseRecord rec;
  read_case_columns(q, path_, first_column, rec);
  ChildRowLoader(db_, path_).load(rec, with_artifacts);
  return rec;
}

std::int64_t RunStore::case_count() const {
  Statement q(db_, path_, "SELECT count(*) FROM cases");
  q.step();
  return q.int64(0);
}

std::vector<ArtifactInfo> RunStore::artifact_infos(std::int64_t case_id) const {
  return ChildRowLoader(db_, path_).artifact_infos(case_id);
}

RunStore::Claim RunStore::claim_case(const std::string& backend, const std::string& device,
                                     const std::string& case_key) {
  Transaction tx(db_, path_);
  if (has_case(backend, device, case_key)) return {ClaimOutcome::stored, ""};
  const std::string host = this_host();
  const std::int64_t pid = getpid();
  {
    Statement q(db_, path_,
                "SELECT host, pid, heartbeat_at FROM claims WHERE backend = ? AND device = ? AND case_key = ?");
    q.bind(1, backend).bind(2, device).bind(3, case_key);
    if (q.step()) {
      const std::string owner_host = q.text(0);
      const std::int64_t owner_pid = q.int64(1);
      const double silent_for = unix_seconds() - q.real(2);
      const bool mine = owner_host == host && owner_pid == pid;
      const bool alive = owner_host == host ? process_exists(owner_pid) : silent_for < kClaimHeartbeatTimeoutSeconds;
      if (!mine && alive) return {ClaimOutcome::claimed_by_other, owner_host + ":" + std::to_string(owner_pid)};
    }
  }
  Statement w(db_, path_,
              "INSERT OR REPLACE INTO claims(backend, device, case_key, host, pid, claimed_at, heartbeat_at) "
              "VALUES (?, ?, ?, ?, ?, ?, ?)");
  const double now = unix_seconds();
  w.bind(1, backend).bind(2, device).bind(3, case_key).bind(4, host).bind(5, pid).bind(6, now).bind(7, now).run();
  tx.commit();
  keep_claims_alive(host, pid);
  return {ClaimOutcome::claimed, ""};
}

void RunStore::release_claim(const std::string& backend, const std::string& device, const std::string& case_key) {
  Statement w(db_, path_,
              "DELETE FROM claims WHERE backend = ? AND device = ? AND case_key = ? AND host = ? AND pid = ?");
  w.bind(1, backend).bind(2, device).bind(3, case_key).bind(4, this_host()).bind(5, std::int64_t(getpid())).run();
}

bool RunStore::has_case(const std::string& backend, const std::string& device, const std::string& case_key) const {
  Statement q(db_, path_,
              "SELECT 1 FROM cases c JOIN runs r ON r.id = c.run_id "
              "WHERE c.case_key = ? AND r.backend = ? AND r.device = ? AND c.status != 'error' LIMIT 1");
  q.bind(1, case_key).bind(2, backend).bind(3, device);
  return q.step();
}

// ---------------------------------------------------------------- export / merge

void RunStore::export_subset(const std::string& out_path, const CaseFilter& filter) const {
  const std::string source = path_;
  create_new_database(out_path, [&](RunStore& out) {
    AttachedSource src(out.db_, out.path_, source);
    Transaction tx(out.db_, out.path_);
    copy_runs_from_src(out.db_, out.path_, &filter);
    tx.commit();
  });
}

MergeResult RunStore::merge_from(const std::string& other_path, MergeMode mode) {
  // Validates the other file with the same checks (and messages) as opening it.
  { RunStore other = RunStore::open_read_only(other_path); }
  std::error_code ec;
  if (std::filesystem::equivalent(other_path, path_, ec)) return {};  // every case is already here
  AttachedSource src(db_, path_, other_path);
  Transaction tx(db_, path_);
  const int replaced = mode == MergeMode::replace
                           ? remove_cases_measured_again(
                                 db_, path_, printable_text(std::filesystem::path(other_path).filename().string()))
                           : 0;
  MergeResult result = copy_runs_from_src(db_, path_, nullptr);
  result.cases_replaced = replaced;
  tx.commit();
  return result;
}

MergeResult merge_databases(const std::vector<std::string>& inputs, const std::string& out, MergeMode mode) {
  // Validate every input before creating anything.
  for (const std::string& in : inputs) {
    RunStore check = RunStore::open_read_only(in);
  }
  MergeResult total;
  create_new_database(out, [&](RunStore& store) {
    for (const std::string& in : inputs) {
      MergeResult r;
      try {
        r = store.merge_from(in, mode);
      } catch (const StoreError& e) {
        throw StoreError(std::string(e.what()) + " (while merging " + in + ")");
      }
      total.runs_added += r.runs_added;
      total.cases_added += r.cases_added;
      total.cases_present += r.cases_present;
      total.cases_replaced += r.cases_replaced;
      for (std::string& c : r.conflicts) total.conflicts.push_back(in + ": " + std::move(c));
    }
  });
  return total;
}

}  // namespace tilepath
