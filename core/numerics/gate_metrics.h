#pragma once
// The numerical gate's metrics: how far a cache representation's attention is from
// attention at full precision (the query as given, the unquantized K and V), per
// (request, kv head) row, with the worst and median over all rows, checked against
// explicit thresholds. Shared by the plugins (the error of every speed run against full
// precision) and by `tilepath gate`. docs/gate.md has the definitions and the defaults.

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tilepath::numerics {

// One (request, kv head) row: its q heads' outputs and attention weights.
struct GateRowMetrics {
  int request = 0, kv_head = 0;
  double rel_l2 = 0;   // ||o - o_ref|| / ||o_ref|| over the row's q heads x head_dim
  double max_abs = 0;  // max |o - o_ref|
  double kl = 0;       // KL(w_ref || w) of the attention weights, nats; the largest of the row's q heads
  double top8 = 1;     // share of w_ref's 8 largest weights among w's 8 largest; the smallest of the row's q heads
  double top32 = 1;    // the same for 32 (k = the context when it is shorter)
};

// The thresholds a representation must meet on every row; NaN disables one. The defaults
// and why (docs/gate.md): FP8 E4M3 values alone cost rel_l2 ~0.03 (K16/V8 on every
// distribution), so 0.1 leaves room for the K path's error while a crushed key residual
// (rel_l2 >= 0.2) fails; KL separates keys that survive FP8 (below 1e-3 nats) from those
// that do not (above 1e-2); top-k agreement is noisy when attention is flat, so its floor
// only catches a lost ranking.
struct GateThresholds {
  double rel_l2 = 0.1;   // worst row at most
  double max_abs = NAN;  // not gated by default: the outputs' scale depends on V
  double kl = 0.005;     // worst row at most (nats)
  double top8 = 0.5;     // worst row at least
  double top32 = 0.5;    // worst row at least
  nlohmann::json to_json() const;
  // Overrides from JSON ({"rel_l2": 0.1, ...}); throws std::invalid_argument naming a bad key.
  static GateThresholds from_json(const nlohmann::json& j, GateThresholds base);
  static GateThresholds from_json(const nlohmann::json& j) { return from_json(j, GateThresholds{}); }
};

struct GateSummary {
  double worst = NAN, median = NAN;
};

struct GateMetrics {
  std::vector<GateRowMetrics> rows;
  int rows_total = 0;                            // rows of the case; rows.size() when every row was checked
  GateSummary rel_l2, max_abs, kl, top8, top32;  // worst = max (min for top-k)
  // Fills the summaries from rows.
  void summarise();
  nlohmann::json to_json() const;  // {"rows_checked", "rows_total", "rel_l2": {"worst", "median"}, ...}
};

struct GateVerdict {
  bool passed = true;
  std::vector<std::string> failures;  // "rel_l2 0.21 > 0.05", ...
};
GateVerdict judge(const GateMetrics& m, const GateThresholds& t);

// Accumulates one row. Outputs are [q heads of the row][head_dim]; weights are
// [q heads of the row][tokens], each q head's weights summing to 1.
class GateRowBuilder {
 public:
  GateRowBuilder(int request, int kv_head, int head_dim, int tokens);
  // One q head: the full-precision output and weights, and the representation's.
  void add_q_head(const double* out_ref, const double* out, const double* w_ref, const double* w);
  // Same with a float output (a kernel's).
  void add_q_head(const double* out_ref, const float* out, const double* w_ref, const double* w);
  GateRowMetrics finish() const;

 private:
  GateRowMetrics m_;
  int head_dim_, tokens_;
  double diff_sq_ = 0, ref_sq_ = 0;
  void add_weights(const double* w_ref, const double* w);
};

// Top-k agreement of two weight vectors (ties broken by the lower token index).
double top_k_agreement(const double* w_ref, const double* w, int tokens, int k);
// KL(p || q) in nats; a q of 0 where p > 0 counts as q = 1e-300.
double kl_divergence(const double* p, const double* q, int n);

}  // namespace tilepath::numerics
