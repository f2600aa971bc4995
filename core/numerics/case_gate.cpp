#include "core/numerics/case_gate.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tilepath::numerics {
namespace {

// Request requests[i] of `stored` and request i of `full` must be the same inputs.
void require_same_inputs(const DecodeProblem& stored, const std::vector<int>& requests, const DecodeProblem& full) {
  const OperatingPoint &a = stored.op, &b = full.op;
  const std::size_t row_elems = static_cast<std::size_t>(a.q_heads) * a.head_dim;
  bool same = a.q_heads == b.q_heads && a.kv_heads == b.kv_heads && a.head_dim == b.head_dim && a.rope == b.rope &&
              full.lengths.size() == requests.size() && full.q.size() == requests.size() * row_elems;
  for (std::size_t i = 0; same && i < requests.size(); ++i) {
    const int r = requests[i];
    same = r >= 0 && r < a.batch && stored.lengths[r] == full.lengths[i] &&
           std::equal(full.q.begin() + i * row_elems, full.q.begin() + (i + 1) * row_elems,
                      stored.q.begin() + r * row_elems);
  }
  if (!same)
    throw std::invalid_argument(
        "case_gate: the full-precision problem is not the stored problem's inputs (shape, lengths or query differ)");
}

// Rows of stored requests `requests` (every kv head) against full-precision requests
// `full_requests`; outputs [requests][q_heads][D] in that order.
void add_rows(const DecodeProblem& stored, const std::vector<int>& requests, const float* out,
              const DecodeProblem& full, const std::vector<int>& full_requests, const std::vector<int>& labels,
              int kv_head_label, GateMetrics& m, double* stored_out) {
  const OperatingPoint& op = stored.op;
  const int D = op.head_dim, G = op.gqa_ratio();
  std::vector<std::vector<double>> w, w_ref;
  const std::vector<double> stored_ref = reference_decode(stored, requests, w);
  if (stored_out != nullptr) std::copy(stored_ref.begin(), stored_ref.end(), stored_out);
  const std::vector<double> ref = reference_decode(full, full_requests, w_ref);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const int len = stored.lengths[requests[i]];
    for (int h = 0; h < op.kv_heads; ++h) {
      GateRowBuilder row(labels[i], kv_head_label >= 0 ? kv_head_label : h, D, len);
      for (int g = 0; g < G; ++g) {
        const std::size_t at = i * op.q_heads + static_cast<std::size_t>(h) * G + g;
        row.add_q_head(&ref[at * D], &out[at * D], w_ref[at].data(), w[at].data());
      }
      m.rows.push_back(row.finish());
    }
  }
}

}  // namespace

GateMetrics case_gate(const DecodeProblem& stored, const std::vector<int>& requests, const std::vector<float>& out,
                      const DecodeProblem& full_precision, std::vector<double>* stored_reference) {
  require_same_inputs(stored, requests, full_precision);
  const OperatingPoint& op = stored.op;
  const std::size_t row_elems = static_cast<std::size_t>(op.q_heads) * op.head_dim;
  if (out.size() != requests.size() * row_elems)
    throw std::invalid_argument("case_gate: " + std::to_string(out.size()) + " outputs for " +
                                std::to_string(requests.size()) + " requests of " + std::to_string(row_elems));
  GateMetrics m;
  if (stored_reference != nullptr) stored_reference->assign(out.size(), 0.0);
  // A few requests at a time: the weights of every (request, q head) would otherwise
  // hold tokens x q_heads doubles twice over for the whole batch.
  constexpr std::size_t kRequestsPerPass = 4;
  for (std::size_t first = 0; first < requests.size(); first += kRequestsPerPass) {
    const std::size_t last = std::min(requests.size(), first + kRequestsPerPass);
    const std::vector<int> chunk(requests.begin() + first, requests.begin() + last);
    std::vector<int> full_chunk(last - first);
    std::iota(full_chunk.begin(), full_chunk.end(), static_cast<int>(first));
    add_rows(stored, chunk, &out[first * row_elems], full_precision, full_chunk, chunk, -1, m,
             stored_reference != nullptr ? &(*stored_reference)[first * row_elems] : nullptr);
  }
  m.rows_total = static_cast<int>(m.rows.size());
  m.summarise();
  return m;
}

GateRowMetrics case_gate_row(const DecodeProblem& stored_row, const DecodeProblem& full_precision_row,
                             const float* out_row, int request, int kv_head, std::vector<double>* stored_reference) {
  if (stored_row.op.batch != 1 || stored_row.op.kv_heads != 1)
    throw std::invalid_argument("case_gate_row: a row problem has one request and one kv head");
  require_same_inputs(stored_row, {0}, full_precision_row);
  GateMetrics m;
  if (stored_reference != nullptr)
    stored_reference->assign(static_cast<std::size_t>(stored_row.op.q_heads) * stored_row.op.head_dim, 0.0);
  add_rows(stored_row, {0}, out_row, full_precision_row, {0}, {request}, kv_head, m,
           stored_reference != nullptr ? stored_reference->data() : nullptr);
  return m.rows.front();
}

}  // namespace tilepath::numerics
