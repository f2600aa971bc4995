#include "backends/cuda/decode_inputs.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>

#include "backends/cuda/bias_rotation_tables.h"

namespace tilepath::cuda {
namespace {

std::vector<std::int32_t> lengths_of(const OperatingPoint& op) {
  if (!op.context_lengths.empty()) return {op.context_lengths.begin(), op.context_lengths.end()};
  return std::vector<std::int32_t>(op.batch, op.context);
}

int pages_for(int tokens, int page_size) { return (tokens + page_size - 1) / page_size; }

int bytes_per_k(const OperatingPoint& op) { return k_is_fp8(op.kv) ? 1 : 2; }
int bytes_per_v(const OperatingPoint& op) { return v_is_fp8(op.kv) ? 1 : 2; }

std::vector<float> scales_or_ones(const std::vector<float>& scales, int kv_heads) {
  if (!scales.empty()) return scales;
  return std::vector<float>(kv_heads, 1.0f);
}

// Device page ids for a position-bound tiled case: (request b, page i) gets k·N + q, with q
// pool request (b mod P)'s page i (N pool pages, so id mod N = q is the copy it holds) and
// k a replica of q drawn at random, so that a request's pages still scatter over the cache.
void assign_position_bound_pages(HostDecodeCase& c, std::uint64_t seed) {
  const numerics::DecodeProblem& pool = c.source;
  const int pool_requests = pool.op.batch, pool_pages = pool.num_pages;
  const int batch = int(c.lengths.size());
  const int replicas = (batch + pool_requests - 1) / pool_requests;
  c.num_pages = replicas * pool_pages;
  std::mt19937_64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  std::vector<std::vector<std::int32_t>> free_replicas(pool_pages, std::vector<std::int32_t>(replicas));
  for (auto& r : free_replicas) {
    std::iota(r.begin(), r.end(), 0);
    std::shuffle(r.begin(), r.end(), rng);
  }
  c.page_table.assign(std::size_t(batch) * c.max_pages_per_seq, 0);
  for (int b = 0; b < batch; ++b) {
    const int r = b % pool_requests;
    for (int i = 0; i < pages_for(c.lengths[b], c.op.page_size); ++i) {
      const int q = pool.page_table[std::size_t(r) * pool.max_pages_per_seq + i];
      std::vector<std::int32_t>& left = free_replicas[q];
      c.page_table[std::size_t(b) * c.max_pages_per_seq + i] = left.back() * pool_pages + q;
      left.pop_back();
    }
  }
}

}  // namespace

DecodeArgs decode_shape_args(const OperatingPoint& op, int splits) {
  DecodeArgs args;
  args.batch = op.batch;
  args.q_heads = op.q_heads;
  args.kv_heads = op.kv_heads;
  args.head_dim = op.head_dim;
  args.page_size = op.page_size;
  args.kv_dtype = static_cast<int>(op.kv);
  args.k_path = static_cast<int>(op.k_path);
  args.mode = static_cast<int>(op.mode);
  args.k_repr = static_cast<int>(op.k_repr);
  args.mma = op.mma == Mma::wgmma ? kMmaWgmma : kMmaSync;
  args.splits = std::max(1, splits);
  args.scale_per_head = op.scale == ScaleGranularity::per_head ? 1 : 0;
  return args;
}

HostDecodeCase make_host_case(const OperatingPoint& op, std::uint64_t seed, bool allow_tiling,
                              double tile_above_host_bytes, numerics::KeyDistribution keys) {
  HostDecodeCase c;
  c.op = op;
  c.seed = seed;
  c.keys = keys;
  const std::vector<std::int32_t> lengths = lengths_of(op);
  const double token_bytes = double(op.kv_heads) * op.head_dim * (bytes_per_k(op) + bytes_per_v(op));
  const double total_tokens = std::accumulate(lengths.begin(), lengths.end(), 0.0);

  if (!allow_tiling || total_tokens * token_bytes <= tile_above_host_bytes) {
    c.source = numerics::make_problem(op, seed, keys);
    c.num_pages = c.source.num_pages;
    c.max_pages_per_seq = c.source.max_pages_per_seq;
    c.page_table = c.source.page_table;
    c.lengths = c.source.lengths;
    return c;
  }

  c.tiled = true;
  OperatingPoint pool_op = op;
  pool_op.context_lengths.clear();
  pool_op.batch = kPoolRequests;
  const int max_len = *std::max_element(lengths.begin(), lengths.end());
  // A prebias cache stores K_t - RoPE_t(b) and the kernel adds RoPE_t(b) at the token's
  // own position, so each token must sit where it sat in the pool: full-length pool
  // requests, and device request b's page i is a copy of pool request (b mod pool)'s page i.
  const bool position_bound = op.k_repr == KRepr::prebias;
  if (position_bound) {
    const long long fit = (long long)(tile_above_host_bytes / (token_bytes * max_len));
    pool_op.batch = int(std::clamp<long long>(fit, 1, std::min(kPoolRequests, op.batch)));
    pool_op.context = max_len;
  } else {
    const long long pool_tokens_per_request = (long long)(tile_above_host_bytes / token_bytes) / pool_op.batch;
    int pool_context = int(std::min<long long>(max_len, pool_tokens_per_request));
    pool_context = std::max(op.page_size, pool_context / op.page_size * op.page_size);
    pool_op.context = pool_context;
  }
  c.source = numerics::make_problem(pool_op, seed, keys);

  c.lengths = lengths;
  c.max_pages_per_seq = 0;
  for (int len : lengths) {
    c.num_pages += pages_for(len, op.page_size);
    c.max_pages_per_seq = std::max(c.max_pages_per_seq, pages_for(len, op.page_size));
  }
  if (position_bound) {
    assign_position_bound_pages(c, seed);
    return c;
  }
  // Distinct, shuffled page ids (as make_problem does): the kernel must follow
  // the page table, and every page is its own memory.
  std::vector<std::int32_t> ids(c.num_pages);
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937_64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  // TILEPATH_CUDA_PAGE_ORDER=sequential (A/B runs only): pages in request order, to
  // measure what scattered pages cost the kernel (bench/results/ab).
  const char* page_order = std::getenv("TILEPATH_CUDA_PAGE_ORDER");
  if (!(page_order && std::strcmp(page_order, "sequential") == 0)) std::shuffle(ids.begin(), ids.end(), rng);
  c.page_table.assign(std::size_t(op.batch) * c.max_pages_per_seq, 0);
  std::size_t next = 0;
  for (int b = 0; b < op.batch; ++b) {
    for (int i = 0; i < pages_for(lengths[b], op.page_size); ++i)
      c.page_table[std::size_t(b) * c.max_pages_per_seq + i] = ids[next++];
  }
  return c;
}

HostDecodeCase full_precision_case(const HostDecodeCase& c) {
  HostDecodeCase full = c;
  full.op = numerics::full_precision_op(c.op);
  full.source = numerics::make_full_precision_problem(c.source.op, c.seed, c.keys);
  return full;
}

numerics::DecodeProblem reference_problem_for_row(const HostDecodeCase& c, int b, int kv_head) {
  const OperatingPoint& op = c.op;
  const numerics::DecodeProblem& src = c.source;
  const int group = op.q_heads / op.kv_heads;
  const int len = c.lengths[b];
  const int pages = pages_for(len, op.page_size);
  const std::size_t D = std::size_t(op.head_dim);
  const std::size_t P = std::size_t(op.page_size);

  numerics::DecodeProblem p;
  p.op = op;
  p.op.batch = 1;
  p.op.context = len;
  p.op.context_lengths.clear();
  p.op.q_heads = group;
  p.op.kv_heads = 1;
  p.num_pages = pages;
  p.max_pages_per_seq = pages;
  p.page_table.resize(pages);
  std::iota(p.page_table.begin(), p.page_table.end(), 0);
  p.lengths = {len};
  p.softmax_scale = src.softmax_scale;

  const auto slice_pages = [&](const auto& src_pages, auto& dst_pages) {
    if (src_pages.empty()) return;
    dst_pages.assign(std::size_t(pages) * P * D, 0);
    for (int i = 0; i < pages; ++i) {
      const int device_page = c.page_table[std::size_t(b) * c.max_pages_per_seq + i];
      const std::size_t src_page =
          c.tiled ? std::size_t(device_page) % std::size_t(src.num_pages) : std::size_t(device_page);
      for (std::size_t t = 0; t < P; ++t) {
        const std::size_t from = ((src_page * P + t) * op.kv_heads + kv_head) * D;
        std::copy_n(src_pages.begin() + from, D, dst_pages.begin() + (i * P + t) * D);
      }
    }
  };
  slice_pages(src.k16, p.k16);
  slice_pages(src.v16, p.v16);
  slice_pages(src.k8, p.k8);
  slice_pages(src.v8, p.v8);

  const int src_request = c.tiled ? b % src.op.batch : b;
  p.q.resize(std::size_t(group) * D);
  for (int g = 0; g < group; ++g) {
    const std::size_t from = (std::size_t(src_request) * op.q_heads + std::size_t(kv_head) * group + g) * D;
    std::copy_n(src.q.begin() + from, D, p.q.begin() + g * D);
  }
  const auto pick_scale = [&](const std::vector<float>& scales) -> std::vector<float> {
    if (scales.empty()) return {};
    return {scales.size() > std::size_t(kv_head) ? scales[kv_head] : scales[0]};
  };
  p.k_scale = pick_scale(src.k_scale);
  p.v_scale = pick_scale(src.v_scale);
  if (!src.k_bias.empty()) p.k_bias.assign(src.k_bias.begin() + kv_head * D, src.k_bias.begin() + (kv_head + 1) * D);
  return p;
}

void DeviceDecodeInputs::upload(const HostDecodeCase& c, int splits, cudaStream_t stream, DecodeArgs& args) {
  const OperatingPoint& op = c.op;
  const numerics::DecodeProblem& src = c.source;
  const std::size_t page_elems = std::size_t(op.page_size) * op.kv_heads * op.head_dim;

  const auto upload_pages = [&](DeviceBuffer& dst, const void* host, int bytes_per_elem) {
    const std::size_t page_bytes = page_elems * bytes_per_elem;
    dst.reserve(std::size_t(c.num_pages) * page_bytes);
    auto* base = dst.as<std::uint8_t>();
    const std::size_t src_pages = std::min<std::size_t>(src.num_pages, c.num_pages);
    TP_CUDA_CHECK(cudaMemcpyAsync(base, host, src_pages * page_bytes, cudaMemcpyHostToDevice, stream));
    // Tiled: replicate the pool over the whole cache by doubling device copies.
    std::size_t filled = src_pages;
    while (filled < std::size_t(c.num_pages)) {
      const std::size_t n = std::min(filled, std::size_t(c.num_pages) - filled);
      TP_CUDA_CHECK(
          cudaMemcpyAsync(base + filled * page_bytes, base, n * page_bytes, cudaMemcpyDeviceToDevice, stream));
      filled += n;
    }
  };
  const bool k8 = k_is_fp8(op.kv), v8 = v_is_fp8(op.kv);
  upload_pages(k_pages_, k8 ? static_cast<const void*>(src.k8.data()) : src.k16.data(), k8 ? 1 : 2);
  upload_pages(v_pages_, v8 ? static_cast<const void*>(src.v8.data()) : src.v16.data(), v8 ? 1 : 2);

  const std::size_t q_row = std::size_t(op.q_heads) * op.head_dim;
  std::vector<std::uint16_t> q(std::size_t(op.batch) * q_row);
  for (int b = 0; b < op.batch; ++b) {
    const int from = c.tiled ? b % src.op.batch : b;
    std::copy_n(src.q.begin() + std::size_t(from) * q_row, q_row, q.begin() + std::size_t(b) * q_row);
  }
  q_.upload(q, stream);
  page_table_.upload(c.page_table, stream);
  lengths_.upload(c.lengths, stream);
  k_scale_.upload(scales_or_ones(src.k_scale, op.kv_heads), stream);
  v_scale_.upload(scales_or_ones(src.v_scale, op.kv_heads), stream);

  out_elems_ = std::size_t(op.batch) * q_row;
  out_.reserve(out_elems_ * sizeof(std::uint16_t));

  args = decode_shape_args(op, splits);
  args.max_pages_per_seq = c.max_pages_per_seq;
  args.num_pages = c.num_pages;
  args.split_tokens = split_tokens_for(*std::max_element(c.lengths.begin(), c.lengths.end()), args.splits);
  args.softmax_scale = src.softmax_scale;

  // Workspaces: each piece sized for its own use, and never below what the
  // kernels ask for in total (decode_workspace_bytes), whatever their layout.
  const std::size_t asked = decode_workspace_bytes(args);
  const std::size_t rows = std::size_t(op.batch) * op.q_heads;
  partial_out_.reserve(std::max(std::size_t(args.splits) * rows * op.head_dim * sizeof(float), asked) + 256);
  partial_lse_.reserve(std::max(std::size_t(args.splits) * rows * sizeof(float), asked) + 256);

  args.q = q_.as<std::uint16_t>();
  args.k_pages = k_pages_.get();
  args.v_pages = v_pages_.get();
  args.page_table = page_table_.as<std::int32_t>();
  args.lengths = lengths_.as<std::int32_t>();
  args.k_scale = k_scale_.as<float>();
  args.v_scale = v_scale_.as<float>();
  args.out = out_.as<std::uint16_t>();
  args.partial_out = partial_out_.as<float>();
  args.partial_lse = partial_lse_.as<float>();
  if (op.k_repr == KRepr::prebias) {
    const BiasRotationTables tables = make_bias_rotation_tables(op.head_dim);
    k_bias_.upload(src.k_bias, stream);
    bias_phase_step_.upload(tables.phase_step, stream);
    bias_table_.upload(tables.tile_table, stream);
    bias_step_rotation_.upload(tables.step_rotation, stream);
    args.k_bias = k_bias_.as<float>();
    args.bias_phase_step = bias_phase_step_.as<std::uint32_t>();
    args.bias_table = bias_table_.as<std::uint32_t>();
    args.bias_step_rotation = bias_step_rotation_.as<float>();
  }
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));  // host vectors may go out of scope
}

void DeviceDecodeInputs::set_lengths(const std::vector<std::int32_t>& lengths, cudaStream_t stream, DecodeArgs& args) {
  lengths_.upload(lengths, stream);
  args.split_tokens = split_tokens_for(*std::max_element(lengths.begin(), lengths.end()), args.splits);
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void DeviceDecodeInputs::poison_output(cudaStream_t stream) {
  TP_CUDA_CHECK(cudaMemsetAsync(out_.get(), 0xFF, out_elems_ * sizeof(std::uint16_t), stream));
}

std::vector<std::uint16_t> DeviceDecodeInputs::download_output(cudaStream_t stream) {
  std::vector<std::uint16_t> out(out_elems_);
  TP_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), out_.get(), out_elems_ * sizeof(std::uint16_t), cudaMemcpyDeviceToHost, stream));
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

double DeviceDecodeInputs::device_bytes() const {
  return double(q_.capacity() + k_pages_.capacity() + v_pages_.capacity() + page_table_.capacity() +
                lengths_.capacity() + k_scale_.capacity() + v_scale_.capacity() + out_.capacity() +
                partial_out_.capacity() + partial_lse_.capacity());
}

}  // namespace tilepath::cuda
