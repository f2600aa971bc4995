#include "backends/cuda/output_check.h"

#include <algorithm>
#include <future>
#include <random>
#include <set>
#include <utility>

#include "core/numerics/fp8.h"

namespace tilepath::cuda {

OutputCheck check_output(const HostDecodeCase& c, const std::vector<std::uint16_t>& out_bf16, std::uint64_t seed) {
  const OperatingPoint& op = c.op;
  OutputCheck check;
  check.tolerance = numerics::default_tolerance(op);
  check.rows_total = op.batch * op.kv_heads;
  check.unwritten = std::count(out_bf16.begin(), out_bf16.end(), std::uint16_t(0xFFFF));

  std::vector<float> out;
  std::vector<double> ref;
  const bool check_all = !c.tiled && double(op.total_tokens()) * op.q_heads * op.head_dim <= kFullCheckMaxWork;
  if (check_all) {
    out.resize(out_bf16.size());
    std::transform(out_bf16.begin(), out_bf16.end(), out.begin(), numerics::bf16_to_float);
    ref = numerics::reference_decode(c.source);
    check.rows_checked = check.rows_total;
    check.what_was_checked =
        "all " + std::to_string(check.rows_total) + " (request, kv-head) rows vs float64 reference";
  } else {
    std::mt19937_64 rng(seed ^ 0xC0FFEEull);
    std::uniform_int_distribution<int> pick_head(0, op.kv_heads - 1);
    const int longest = int(std::max_element(c.lengths.begin(), c.lengths.end()) - c.lengths.begin());
    std::set<int> requests = {0, op.batch - 1, longest};
    std::vector<std::pair<int, int>> rows;
    for (int b : requests) rows.push_back({b, pick_head(rng)});
    // The float64 references of the rows are independent: compute them in parallel.
    std::vector<std::future<std::vector<double>>> row_refs;
    for (const auto& [b, h] : rows)
      row_refs.push_back(std::async(std::launch::async, [&c, b = b, h = h] {
        return numerics::reference_decode(reference_problem_for_row(c, b, h));
      }));
    const int group = op.q_heads / op.kv_heads;
    const std::size_t D = std::size_t(op.head_dim);
    check.what_was_checked = "sampled (request, kv-head) rows vs float64 reference:";
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const auto [b, h] = rows[r];
      const auto row_ref = row_refs[r].get();
      ref.insert(ref.end(), row_ref.begin(), row_ref.end());
      const std::size_t from = (std::size_t(b) * op.q_heads + std::size_t(h) * group) * D;
      for (std::size_t i = 0; i < group * D; ++i) out.push_back(numerics::bf16_to_float(out_bf16[from + i]));
      check.what_was_checked += " (" + std::to_string(b) + "," + std::to_string(h) + ")";
    }
    check.rows_checked = int(rows.size());
    check.what_was_checked +=
        " of " + std::to_string(check.rows_total) + (c.tiled ? " (cache tiled from a random pool)" : "");
  }
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
