#pragma once
// The numerical gate on a speed case's own inputs (docs/gate.md): a kernel's outputs
// against attention at full precision on the same seed's inputs (the BF16 query, the
// unquantized keys and values, make_full_precision_problem), per (request, kv head) row.
// rel_l2 and max_abs compare the kernel's own outputs; kl and top-k compare the attention
// weights of the stored cache under the path's query with the full-precision weights (a
// kernel does not return its weights, and its check shows it computes that function).

#include <vector>

#include "core/numerics/decode_problem.h"
#include "core/numerics/gate_metrics.h"

namespace tilepath::numerics {

// out: the kernel's outputs of the listed requests, [requests.size()][q_heads][head_dim]
// in the order given; full_precision: make_full_precision_requests(op, seed, dist,
// requests) (request i is stored request requests[i]). Every kv head of each listed
// request is a row; rows_total is left to the caller (the case's batch x kv heads).
// Throws std::invalid_argument when the problems are not the same inputs (shape,
// lengths or query differ). The gate computes the stored cache's float64 reference for
// its weights anyway: stored_reference, when given, receives those outputs (laid out as
// `out`), the kernel check's reference, so a caller never computes it twice.
GateMetrics case_gate(const DecodeProblem& stored, const std::vector<int>& requests, const std::vector<float>& out,
                      const DecodeProblem& full_precision, std::vector<double>* stored_reference = nullptr);

// One row given as one-request, one-kv-head problems (a sampled row of a large case):
// out_row is [q heads of the row][head_dim]; the row is labelled (request, kv_head).
GateRowMetrics case_gate_row(const DecodeProblem& stored_row, const DecodeProblem& full_precision_row,
                             const float* out_row, int request, int kv_head,
                             std::vector<double>* stored_reference = nullptr);

}  // namespace tilepath::numerics
