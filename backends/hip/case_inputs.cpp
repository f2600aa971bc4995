#include "backends/hip/case_inputs.h"

#include <algorithm>

namespace tilepath::hip {
namespace {

std::vector<std::int32_t> lengths_of(const OperatingPoint& op) {
  if (!op.context_lengths.empty()) return {op.context_lengths.begin(), op.context_lengths.end()};
  return std::vector<std::int32_t>(op.batch, op.context);
}

// The pool a large case is tiled from: <= kPoolRequests requests of equal length, about
// `bytes` of K+V, no longer than the case's longest request.
OperatingPoint pool_op(const OperatingPoint& op, double bytes) {
  OperatingPoint pool = op;
  pool.batch = std::min(op.batch, kPoolRequests);
  pool.context_lengths.clear();
  const double per_token =
      double(pool.batch) * op.kv_heads * op.head_dim * ((k_is_fp8(op.kv) ? 1 : 2) + (v_is_fp8(op.kv) ? 1 : 2));
  pool.context = std::clamp(int(bytes / per_token), op.page_size, op.max_context());
  return pool;
}

}  // namespace

CaseInputs make_case_inputs(const OperatingPoint& op, std::uint64_t seed, numerics::KeyDistribution keys,
                            double tile_above_bytes) {
  CaseInputs c;
  c.op = op;
  c.seed = seed;
  c.keys = keys;
  c.lengths = lengths_of(op);
  const double cache_bytes =
      double(op.total_tokens()) * op.kv_heads * op.head_dim * ((k_is_fp8(op.kv) ? 1 : 2) + (v_is_fp8(op.kv) ? 1 : 2));
  c.tiled = cache_bytes > tile_above_bytes;
  c.source = numerics::make_problem(c.tiled ? pool_op(op, tile_above_bytes) : op, seed, keys);
  if (!c.tiled) {
    c.num_pages = c.source.num_pages;
    c.max_pages_per_seq = c.source.max_pages_per_seq;
    c.page_table = c.source.page_table;
    c.q = c.source.q;
    return c;
  }
  // Distinct device pages per request, in order; padding entries are page 0 (never read).
  c.max_pages_per_seq = (op.max_context() + op.page_size - 1) / op.page_size;
  c.page_table.assign(std::size_t(op.batch) * c.max_pages_per_seq, 0);
  int next = 0;
  for (int b = 0; b < op.batch; ++b) {
    const int pages = (c.lengths[b] + op.page_size - 1) / op.page_size;
    for (int i = 0; i < pages; ++i) c.page_table[std::size_t(b) * c.max_pages_per_seq + i] = next++;
  }
  c.num_pages = next;
  const std::size_t row = std::size_t(op.q_heads) * op.head_dim;
  c.q.resize(std::size_t(op.batch) * row);
  for (int b = 0; b < op.batch; ++b) {
    const std::size_t from = std::size_t(b % c.source.op.batch) * row;
    std::copy_n(c.source.q.begin() + from, row, c.q.begin() + std::size_t(b) * row);
  }
  return c;
}

numerics::DecodeProblem request_problem(const CaseInputs& c, const numerics::DecodeProblem& source, int b) {
  numerics::DecodeProblem r;
  r.op = source.op;
  r.op.batch = 1;
  r.op.context = c.lengths[b];
  r.op.context_lengths.clear();
  const int pages = (c.lengths[b] + c.op.page_size - 1) / c.op.page_size;
  r.num_pages = pages;
  r.max_pages_per_seq = pages;
  r.page_table.resize(pages);
  for (int i = 0; i < pages; ++i) r.page_table[i] = i;
  r.lengths = {c.lengths[b]};
  r.k_scale = source.k_scale;
  r.v_scale = source.v_scale;
  r.softmax_scale = source.softmax_scale;
  const std::size_t row = std::size_t(c.op.q_heads) * c.op.head_dim;
  const std::size_t q_from = std::size_t(c.tiled ? b % source.op.batch : b) * row;
  r.q.assign(source.q.begin() + q_from, source.q.begin() + q_from + row);
  const std::size_t page = source.k_page_elems();
  const auto gather = [&](const auto& from, auto& to) {
    if (from.empty()) return;
    to.resize(std::size_t(pages) * page);
    for (int i = 0; i < pages; ++i) {
      const int src = c.source_page(c.page_table[std::size_t(b) * c.max_pages_per_seq + i]);
      std::copy_n(from.begin() + std::size_t(src) * page, page, to.begin() + std::size_t(i) * page);
    }
  };
  gather(source.k8, r.k8);
  gather(source.v8, r.v8);
  gather(source.k16, r.k16);
  gather(source.v16, r.v16);
  return r;
}

numerics::DecodeProblem full_precision_source(const CaseInputs& c) {
  return numerics::make_full_precision_problem(c.source.op, c.seed, c.keys);
}

}  // namespace tilepath::hip
