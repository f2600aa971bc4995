#include "backends/cuda/output_check.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <utility>

#include "core/numerics/case_gate.h"
#include "core/numerics/fp8.h"
#include "core/numerics/parallel_for.h"

namespace tilepath::cuda {
namespace {

// The rows a large case compares: the first, last and longest requests, then distinct
// random rows while the float64 work (tokens x q heads x head dim, both references
// alike) stays within kFullCheckMaxWork; at least those three rows, at most all.
std::vector<std::pair<int, int>> sample_rows(const HostDecodeCase& c, std::uint64_t seed) {
  const OperatingPoint& op = c.op;
  const int group = op.q_heads / op.kv_heads;
  std::mt19937_64 rng(seed ^ 0xC0FFEEull);
  std::uniform_int_distribution<int> pick_head(0, op.kv_heads - 1);
  std::uniform_int_distribution<int> pick_request(0, op.batch - 1);
  const int longest = int(std::max_element(c.lengths.begin(), c.lengths.end()) - c.lengths.begin());
  std::set<std::pair<int, int>> chosen;
  std::vector<std::pair<int, int>> rows;
  double work = 0;
  auto add = [&](int b, int h) {
    if (!chosen.insert({b, h}).second) return;
    rows.push_back({b, h});
    work += double(c.lengths[b]) * group * op.head_dim;
  };
  for (int b : std::set<int>{0, op.batch - 1, longest}) add(b, pick_head(rng));
  const std::size_t all_rows = std::size_t(op.batch) * op.kv_heads;
  // Bounded tries: the budget may end the sampling before every row is drawn.
  for (int tries = 0; work < kFullCheckMaxWork && chosen.size() < all_rows && tries < 4 * int(all_rows); ++tries) {
    const int b = pick_request(rng);
    if (work + double(c.lengths[b]) * group * op.head_dim > kFullCheckMaxWork) break;
    add(b, pick_head(rng));
  }
  return rows;
}

}  // namespace

OutputCheck check_output(const HostDecodeCase& c, const std::vector<std::uint16_t>& out_bf16, std::uint64_t seed) {
  const OperatingPoint& op = c.op;
  OutputCheck check;
  check.tolerance = numerics::default_tolerance(op);
  check.rows_total = op.batch * op.kv_heads;
  check.unwritten = std::count(out_bf16.begin(), out_bf16.end(), std::uint16_t(0xFFFF));

  std::vector<float> out;
  std::vector<double> ref;
  const HostDecodeCase full = full_precision_case(c);
  const bool check_all = !c.tiled && double(op.total_tokens()) * op.q_heads * op.head_dim <= kFullCheckMaxWork;
  if (check_all) {
    out.resize(out_bf16.size());
    std::transform(out_bf16.begin(), out_bf16.end(), out.begin(), numerics::bf16_to_float);
    std::vector<int> every(op.batch);
    std::iota(every.begin(), every.end(), 0);
    check.gate = numerics::case_gate(c.source, every, out, full.source, &ref);
    check.rows_checked = check.rows_total;
    check.what_was_checked =
        "all " + std::to_string(check.rows_total) + " (request, kv-head) rows vs float64 reference";
  } else {
    const std::vector<std::pair<int, int>> rows = sample_rows(c, seed);
    const int group = op.q_heads / op.kv_heads;
    const std::size_t row_elems = std::size_t(group) * op.head_dim;
    out.resize(rows.size() * row_elems);
    std::vector<std::vector<double>> row_refs(rows.size());
    check.gate.rows.resize(rows.size());
    // Each row is a one-request problem: the kernel check's reference and the gate's,
    // independent of the other rows.
    numerics::parallel_for(std::int64_t(rows.size()), [&](std::int64_t r) {
      const auto [b, h] = rows[r];
      const std::size_t from = (std::size_t(b) * op.q_heads + std::size_t(h) * group) * op.head_dim;
      float* row_out = &out[std::size_t(r) * row_elems];
      for (std::size_t i = 0; i < row_elems; ++i) row_out[i] = numerics::bf16_to_float(out_bf16[from + i]);
      check.gate.rows[r] = numerics::case_gate_row(reference_problem_for_row(c, b, h),
                                                   reference_problem_for_row(full, b, h), row_out, b, h, &row_refs[r]);
    });
    for (const auto& row_ref : row_refs) ref.insert(ref.end(), row_ref.begin(), row_ref.end());
    check.gate.summarise();
    check.rows_checked = int(rows.size());
    check.what_was_checked = std::to_string(rows.size()) + " sampled (request, kv-head) rows";
    if (rows.size() <= 4) {
      check.what_was_checked += ":";
      for (const auto& [b, h] : rows)
        check.what_was_checked += " (" + std::to_string(b) + "," + std::to_string(h) + ")";
    }
    check.what_was_checked += " of " + std::to_string(check.rows_total) + " vs float64 reference" +
                              (c.tiled ? " (cache tiled from a random pool)" : "");
  }
  check.gate.rows_total = check.rows_total;
  const numerics::ErrorStats stats = numerics::compare(out, ref);
  check.rel_l2 = stats.rel_l2;
  check.max_abs = stats.max_abs;
  // Non-finite anywhere in the output fails, not only in the compared rows.
  check.all_finite = stats.all_finite && std::none_of(out_bf16.begin(), out_bf16.end(), [](std::uint16_t bits) {
                       return (bits & 0x7F80) == 0x7F80;  // BF16 Inf/NaN exponent
                     });
  check.passed = check.unwritten == 0 && check.all_finite && check.rel_l2 <= check.tolerance;
  return check;
}

}  // namespace tilepath::cuda
