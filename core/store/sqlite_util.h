#pragma once
// Thin RAII helpers over the SQLite C API used by the run store. Every call is
// checked; failures become StoreError naming the file and what was being done.

#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/store/run_store.h"

namespace tilepath::store {

// "<path>: <what>: <sqlite message>", or the lock message when SQLite says busy,
// so callers see one line whatever went wrong.
inline std::string sqlite_error_text(sqlite3* db, const std::string& path, std::string_view what, int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return path + " is locked by another process";
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    return path + ": not a tilepath database (" + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) + ")";
  std::string msg = path + ": " + std::string(what) + ": ";
  msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return msg;
}

[[noreturn]] inline void throw_sqlite(sqlite3* db, const std::string& path, std::string_view what, int rc) {
  throw StoreError(sqlite_error_text(db, path, what, rc));
}

inline void check_rc(int rc, sqlite3* db, const std::string& path, std::string_view what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) throw_sqlite(db, path, what, rc);
}

// Runs one or more statements that return no rows.
inline void exec(sqlite3* db, const std::string& path, const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string detail = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    const int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) throw StoreError(path + " is locked by another process");
    throw StoreError(path + ": " + detail + " (in: " + sql.substr(0, 60) + ")");
  }
}

// A prepared statement; bind by 1-based index, step, read columns by 0-based index.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const std::string& sql) : db_(db), path_(&path) {
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) throw_sqlite(db, path, "prepare '" + sql.substr(0, 60) + "'", rc);
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  Statement& bind(int i, std::int64_t v) { return checked(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind(int i, int v) { return checked(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind(int i, bool v) { return checked(sqlite3_bind_int64(stmt_, i, v ? 1 : 0)); }
  // NaN (unknown) is stored as NULL: SQLite cannot hold NaN and NULL says "not measured".
  Statement& bind(int i, double v) {
    return checked(std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v));
  }
  Statement& bind(int i, std::string_view v) {
    return checked(sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  Statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Statement& bind_blob(int i, const std::vector<std::uint8_t>& v) {
    // zeroblob-style empty blob rather than NULL so an empty artifact stays an artifact.
    static const std::uint8_t empty = 0;
    return checked(sqlite3_bind_blob64(stmt_, i, v.empty() ? &empty : v.data(), v.size(), SQLITE_TRANSIENT));
  }
  Statement& bind_null(int i) { return checked(sqlite3_bind_null(stmt_, i)); }
  // -1 / 0 style "unknown" integers are stored as NULL when unknown_value matches.
  Statement& bind_or_null(int i, int v, int unknown_value) { return v == unknown_value ? bind_null(i) : bind(i, v); }
  // Bind the next parameter in order (1, 2, ...; restarts at reset()), for long
  // INSERTs where counting indexes by hand invites off-by-one mistakes.
  template <class T>
  Statement& add(const T& v) {
    return bind(++next_param_, v);
  }
  Statement& add_or_null(int v, int unknown_value) { return bind_or_null(++next_param_, v, unknown_value); }

  // true while a row is available; false when done.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_sqlite(db_, *path_, "step '" + std::string(sqlite3_sql(stmt_)).substr(0, 60) + "'", rc);
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    next_param_ = 0;
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  std::int64_t int64(int c) const { return sqlite3_column_int64(stmt_, c); }
  int integer(int c, int if_null = 0) const { return is_null(c) ? if_null : sqlite3_column_int(stmt_, c); }
  double real(int c) const { return is_null(c) ? NAN : sqlite3_column_double(stmt_, c); }
  std::string text(int c) const {
    const auto* p = sqlite3_column_text(stmt_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, c)) : std::string();
  }
  // Valid until the next step or reset of the statement.
  std::string_view text_view(int c) const {
    const auto* p = sqlite3_column_text(stmt_, c);
    return p ? std::string_view(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, c)) : std::string_view();
  }
  // As text(), into a string that keeps its buffer where the text fits (rows read into
  // reused records). One that does not fit gets a buffer of the text's size: assign() would
  // double the capacity, and 100k cases' names held by the GUI grew by 11 MB so.
  void text_to(int c, std::string& out) const {
    const std::string_view text = text_view(c);
    if (text.size() <= out.capacity())
      out.assign(text);
    else
      out = std::string(text);
  }
  std::vector<std::uint8_t> blob(int c) const {
    const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt_, c));
    const int n = sqlite3_column_bytes(stmt_, c);
    return p ? std::vector<std::uint8_t>(p, p + n) : std::vector<std::uint8_t>();
  }

 private:
  Statement& checked(int rc) {
    if (rc != SQLITE_OK) throw_sqlite(db_, *path_, "bind", rc);
    return *this;
  }
  sqlite3* db_;
  const std::string* path_;
  sqlite3_stmt* stmt_ = nullptr;
  int next_param_ = 0;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back when destroyed without commit() (an
// exception in the middle leaves the database as it was before begin).
// IMMEDIATE takes the write lock up front, so a concurrent writer is reported
// as "locked" before anything is written rather than at COMMIT.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) { exec(db, path, "BEGIN IMMEDIATE"); }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, path_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

// Owns a connection that is not yet handed to a RunStore.
class Connection {
 public:
  Connection() = default;
  explicit Connection(sqlite3* db) : db_(db) {}
  Connection(Connection&& o) noexcept : db_(o.release()) {}
  Connection& operator=(Connection&& o) noexcept {
    if (this != &o) {
      sqlite3_close_v2(db_);
      db_ = o.release();
    }
    return *this;
  }
  ~Connection() { sqlite3_close_v2(db_); }
  sqlite3* get() const { return db_; }
  sqlite3* release() {
    sqlite3* d = db_;
    db_ = nullptr;
    return d;
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace tilepath::store
