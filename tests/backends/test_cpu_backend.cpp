// The cpu backend through its C ABI: dlopen the plugin, call tilepath_backend_entry,
// run real cases and check them against the float64 reference.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/abi/tilepath_backend.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/fp8.h"
#include "core/numerics/mxfp8.h"
#include "core/operating_point.h"
#include "tests/stage_cost_lookup.h"

using namespace tilepath;

namespace {

using tilepath::testing::stage_cost;

const tp_backend_api* load_cpu_plugin() {
  static const tp_backend_api* api = [] {
    const std::string path = std::string(TILEPATH_PLUGIN_DIR) + "/libtilepath_backend_cpu.so";
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      ADD_FAILURE() << "dlopen " << path << ": " << dlerror();
      return static_cast<const tp_backend_api*>(nullptr);
    }
    auto entry = reinterpret_cast<tp_backend_entry_fn>(dlsym(handle, TILEPATH_BACKEND_ENTRY_SYMBOL));
    if (entry == nullptr) {
      ADD_FAILURE() << "no " << TILEPATH_BACKEND_ENTRY_SYMBOL << " in " << path;
      return static_cast<const tp_backend_api*>(nullptr);
    }
    const tp_backend_api* a = entry(TILEPATH_ABI_MAJOR, TILEPATH_ABI_MINOR);
    char error[256] = "";
    if (a != nullptr && a->init(error, sizeof error) != 0) ADD_FAILURE() << "init: " << error;
    return a;
  }();
  return api;
}

// A small case (runs in milliseconds).
OperatingPoint small_op(KvDtype kv = KvDtype::k8v8) {
  OperatingPoint op;
  op.batch = 2;
  op.context = 200;  // 3 full tiles + a partial one
  op.q_heads = 8;
  op.kv_heads = 2;
  op.head_dim = 64;
  op.page_size = 16;
  op.kv = kv;
  op.k_path = default_k_path(kv);
  op.mode = default_mode(kv, op.k_path);
  op.cache = CacheState::l2_warm;
  op.splits = 1;
  return op;
}

struct RunOutcome {
  int status = -1;
  std::string message;
  tp_result result{};
  std::vector<float> out;  // from out.npy when tensors were saved
};

tp_run_options quick_options(std::uint64_t seed = 7) {
  tp_run_options o{};
  o.struct_size = sizeof o;
  o.warmup = 0;
  o.repeats = 1;
  o.seed = seed;
  return o;
}

// Reads a little-endian float32 .npy written by save_problem_npy.
std::vector<float> read_npy_f4(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GE(bytes.size(), 10u) << file;
  if (bytes.size() < 10) return {};
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  const std::string header = bytes.substr(10, header_len);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  std::vector<float> values((bytes.size() - 10 - header_len) / 4);
  std::memcpy(values.data(), bytes.data() + 10 + header_len, values.size() * 4);
  return values;
}

RunOutcome run(const OperatingPoint& op, tp_run_options options, bool keep_output = false, int device = 0) {
  const tp_backend_api* api = load_cpu_plugin();
  RunOutcome outcome;
  if (api == nullptr) return outcome;
  std::string dir;
  if (keep_output) {
    dir = (std::filesystem::temp_directory_path() /
           ("tilepath_cpu_test_" + std::to_string(::getpid()) + "_" +
            std::to_string(std::hash<std::string>{}(op.key())) + "_d" + std::to_string(device)))
              .string();
    std::filesystem::remove_all(dir);
    options.save_tensors_dir = dir.c_str();
  }
  const tp_case c = to_tp_case(op);
  outcome.result.struct_size = sizeof(tp_result);
  outcome.status = api->run_case(device, &c, &options, &outcome.result);
  outcome.message = outcome.result.message;
  if (keep_output && outcome.status == TP_OK) {
    outcome.out = read_npy_f4(std::filesystem::path(dir) / "out.npy");
    std::filesystem::remove_all(dir);
  }
  return outcome;
}

void expect_passes(const OperatingPoint& op, const std::string& label, std::uint64_t seed = 7) {
  RunOutcome r = run(op, quick_options(seed));
  EXPECT_EQ(r.status, TP_OK) << label << " " << op.key() << ": " << r.message;
  EXPECT_EQ(r.result.passed, 1) << label;
  EXPECT_TRUE(std::isfinite(r.result.rel_l2_error)) << label;
  EXPECT_LE(r.result.rel_l2_error, r.result.tolerance) << label << " " << op.key();
  EXPECT_EQ(r.result.tolerance, numerics::default_tolerance(op));
  if (std::getenv("TILEPATH_TEST_VERBOSE"))
    std::printf("%-40s rel_l2 %.3g tol %.3g lat %.0f us\n", (label + " " + op.variant_label()).c_str(),
                r.result.rel_l2_error, r.result.tolerance, r.result.latency_us);
  load_cpu_plugin()->release_result(&r.result);
}

}  // namespace

TEST(CpuBackend, LoadsThroughTheCAbi) {
  const tp_backend_api* api = load_cpu_plugin();
  ASSERT_NE(api, nullptr);
  EXPECT_STREQ(api->name, "cpu");
  EXPECT_EQ(api->abi_major, static_cast<uint32_t>(TILEPATH_ABI_MAJOR));
  EXPECT_GE(api->struct_size, sizeof(tp_backend_api));
  ASSERT_EQ(api->device_count(), 2);  // 1: the same processor with gfx942's FNUZ numerics
  EXPECT_STREQ(api->no_device_reason(), "");
  tp_device_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(api->device_info(0, &info), 0);
  EXPECT_EQ(std::string(info.name).rfind("CPU: ", 0), 0u) << info.name;
  EXPECT_STREQ(info.arch, "x86_64");
  EXPECT_EQ(info.sm_count, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_GT(info.memory_bytes, 0u);
  EXPECT_GT(info.bandwidth_gbps, 0.0);
  EXPECT_EQ(info.struct_size, sizeof info);
  EXPECT_STREQ(info.uid, "cpu:0");
  ASSERT_EQ(api->device_info(1, &info), 0);
  EXPECT_STREQ(info.uid, "cpu:1");
  EXPECT_NE(std::string(info.name).find("E4M3 FNUZ numerics of gfx942"), std::string::npos) << info.name;
  EXPECT_NE(api->device_info(2, &info), 0);

  // A host speaking another major gets nothing.
  void* handle = dlopen((std::string(TILEPATH_PLUGIN_DIR) + "/libtilepath_backend_cpu.so").c_str(), RTLD_NOW);
  auto entry = reinterpret_cast<tp_backend_entry_fn>(dlsym(handle, TILEPATH_BACKEND_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry(TILEPATH_ABI_MAJOR + 1, 0), nullptr);
  // Only the entry point is exported.
  EXPECT_EQ(dlsym(handle, "_ZN8tilepath9numerics13float_to_e4m3Ef"), nullptr);
}

TEST(CpuBackend, EveryDtypePathAndModePassesTheReference) {
  int variants = 0;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (KPath path : valid_k_paths(kv)) {
      for (TransformMode mode : valid_modes(kv, path)) {
        OperatingPoint op = small_op(kv);
        op.k_path = path;
        op.mode = mode;
        expect_passes(op, op.variant_label());
        if (k_is_fp8(kv)) {
          op.k_repr = KRepr::prebias;
          expect_passes(op, op.variant_label());
        }
        ++variants;
      }
    }
  }
  EXPECT_EQ(variants, 1 + 3 + 2 + 6);  // k16v16; k8v16 transform x2 + fp8_qk; k16v8 x2; k8v8 2 paths x 3 modes
}

// k_repr mxfp8 through the real tiled kernels: E4M3 elements with one E8M0 scale per 32
// along head_dim, for K and (when FP8) V. Every (kv, k_path, mode) with an FP8 K passes
// its kernel check, post- and (transform) pre-RoPE; the name and the byte floor show it.
TEST(CpuBackend, Mxfp8EveryPathAndModePassesItsKernelCheck) {
  int variants = 0;
  for (KvDtype kv : {KvDtype::k8v16, KvDtype::k8v8}) {
    for (KPath path : valid_k_paths(kv)) {
      for (TransformMode mode : valid_modes(kv, path)) {
        for (RopeLayout rope : {RopeLayout::post_rope, RopeLayout::pre_rope}) {
          if (rope == RopeLayout::pre_rope && path != KPath::transform) continue;  // only k_prep rotates
          OperatingPoint op = small_op(kv);
          op.k_path = path;
          op.mode = mode;
          op.k_repr = KRepr::mxfp8;
          op.rope = rope;
          const std::string label = op.variant_label() + " " + std::string(to_string(rope));
          expect_passes(op, label);
          if (rope == RopeLayout::post_rope) ++variants;
        }
        OperatingPoint op = small_op(kv);
        op.k_path = path;
        op.mode = mode;
        op.k_repr = KRepr::mxfp8;
        RunOutcome r = run(op, quick_options());
        ASSERT_EQ(r.status, TP_OK) << r.message;
        const std::string expected_name = "cpu_decode<" + std::string(to_string(kv)) + "," +
                                          std::string(to_string(path)) + "," + std::string(to_string(mode)) +
                                          ",d64,mxfp8>";
        EXPECT_EQ(std::string(r.result.kernel_name), expected_name);
        // The byte floor counts one E8M0 byte per 32 FP8 elements instead of the per-head scales.
        OperatingPoint plain = op;
        plain.k_repr = KRepr::plain;
        const double fp8_tensors = v_is_fp8(kv) ? 2 : 1;
        const double scale_bytes = double(op.total_tokens()) * op.kv_heads * (op.head_dim / 32) * fp8_tensors;
        EXPECT_DOUBLE_EQ(r.result.bytes_moved, op.bytes_moved());
        EXPECT_DOUBLE_EQ(r.result.bytes_moved - plain.bytes_moved(), scale_bytes - 2.0 * 4.0 * op.kv_heads);
        load_cpu_plugin()->release_result(&r.result);
      }
    }
  }
  EXPECT_EQ(variants, 3 + 6);  // k8v16 transform x2 + fp8_qk; k8v8 2 paths x 3 modes
  for (int head_dim : {128, 256}) {
    for (KPath path : {KPath::transform, KPath::fp8_qk}) {
      OperatingPoint op = small_op();
      op.head_dim = head_dim;
      op.k_path = path;
      op.k_repr = KRepr::mxfp8;
      expect_passes(op, "mxfp8 head_dim " + std::to_string(head_dim));
    }
  }
  OperatingPoint ragged = small_op();
  ragged.k_repr = KRepr::mxfp8;
  ragged.context_lengths = {1, 17, 129};
  ragged.batch = 3;
  ragged.context = 129;
  ragged.splits = 3;
  expect_passes(ragged, "mxfp8 ragged, 3 splits");
}

// The kernel check sees a single block scale: the kernel's saved output matches the
// reference of its own problem and misses, by far, the reference of that problem with
// one K (or V) block scale changed.
TEST(CpuBackend, Mxfp8CorruptedBlockScaleIsCaught) {
  for (KPath path : {KPath::transform, KPath::fp8_qk}) {
    OperatingPoint op = small_op();
    op.k_path = path;
    op.mode = TransformMode::full;
    op.k_repr = KRepr::mxfp8;
    const std::string label = op.variant_label();
    RunOutcome r = run(op, quick_options(11), /*keep_output=*/true);
    ASSERT_EQ(r.status, TP_OK) << r.message;
    load_cpu_plugin()->release_result(&r.result);
    const auto problem = numerics::make_problem(op, 11);
    const auto good = numerics::compare(r.out, numerics::reference_decode(problem));
    EXPECT_LE(good.rel_l2, numerics::default_tolerance(op)) << label;

    // K: the block of request 0, kv head 0 with the largest positive score contribution for
    // q head 0 (so that raising its scale moves the softmax, not a weight already near 0).
    const int D = op.head_dim;
    auto slot_of = [&](int b, int t, int h) {
      const int page = problem.page_table[static_cast<std::size_t>(b) * problem.max_pages_per_seq + t / op.page_size];
      return ((static_cast<std::size_t>(page) * op.page_size + t % op.page_size) * op.kv_heads + h) * D;
    };
    std::size_t k_block = 0;
    double best = -INFINITY;
    for (int t = 0; t < problem.lengths[0]; ++t) {
      const std::size_t slot = slot_of(0, t, 0);
      for (int block = 0; block < D / 32; ++block) {
        double contribution = 0;
        for (int d = block * 32; d < (block + 1) * 32; ++d)
          contribution += numerics::bf16_to_float(problem.q[d]) *
                          numerics::mxfp8_value(problem.k8[slot + d], problem.k_mx_scales[(slot + d) / 32]);
        if (contribution > best) best = contribution, k_block = (slot + block * 32) / 32;
      }
    }
    auto k_corrupt = problem;
    k_corrupt.k_mx_scales[k_block] += 3;  // that block 8x larger
    const double k_error = numerics::compare(r.out, numerics::reference_decode(k_corrupt)).rel_l2;
    EXPECT_GT(k_error, 10 * numerics::default_tolerance(op)) << label << ": one K block scale x8";

    // V: one block of one token of request 1, kv head 1, 256x larger.
    auto v_corrupt = problem;
    v_corrupt.v_mx_scales[slot_of(1, 50, 1) / 32] += 8;
    const double v_error = numerics::compare(r.out, numerics::reference_decode(v_corrupt)).rel_l2;
    EXPECT_GT(v_error, 10 * numerics::default_tolerance(op)) << label << ": one V block scale x256";
    if (std::getenv("TILEPATH_TEST_VERBOSE"))
      std::printf("%-40s kernel check %.3g; vs one K scale x8 %.3g; vs one V scale x256 %.3g\n", label.c_str(),
                  good.rel_l2, k_error, v_error);
  }
}

// supports: mxfp8 wherever plain is accepted with an FP8 K (pre_rope only on the transform
// path, like plain), and refused, naming k_repr, with a BF16 K.
TEST(CpuBackend, SupportsMxfp8WherePlainIsSupported) {
  int accepted = 0;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (KPath path : valid_k_paths(kv)) {
      for (TransformMode mode : valid_modes(kv, path)) {
        for (RopeLayout rope : {RopeLayout::post_rope, RopeLayout::pre_rope}) {
          OperatingPoint op = small_op(kv);
          op.k_path = path;
          op.mode = mode;
          op.rope = rope;
          const tp_case plain_case = to_tp_case(op);
          char why_plain[512] = "";
          const int plain = load_cpu_plugin()->supports(0, &plain_case, why_plain, sizeof why_plain);
          op.k_repr = KRepr::mxfp8;
          const tp_case mx_case = to_tp_case(op);
          char why[512] = "";
          const int mx = load_cpu_plugin()->supports(0, &mx_case, why, sizeof why);
          const std::string label = op.variant_label() + " " + std::string(to_string(rope));
          if (k_is_fp8(kv)) {
            EXPECT_EQ(mx, plain) << label << ": " << why << " / " << why_plain;
            accepted += mx;
          } else {
            EXPECT_EQ(mx, 0) << label;
            EXPECT_NE(std::string(why).find("k_repr"), std::string::npos) << why;
            EXPECT_NE(std::string(why).find("mxfp8 applies only to an FP8 K cache"), std::string::npos) << why;
          }
        }
      }
    }
  }
  EXPECT_EQ(accepted, 9 + 5);  // every FP8-K variant post-RoPE; pre-RoPE the transform ones (k8v16 x2, k8v8 x3)
}

// The gate on the case's own Gaussian inputs: finite for mxfp8, and close to plain
// per-head E4M3 on the same seed (docs/gate.md: 0.046 vs 0.042 at B=2, S=4096).
TEST(CpuBackend, Mxfp8GateOnGaussianKeysIsCloseToPerHeadE4M3) {
  for (KPath path : {KPath::transform, KPath::fp8_qk}) {
    for (std::uint64_t seed : {1, 2, 3}) {
      auto gate = [&](KRepr repr) {
        OperatingPoint op = small_op();
        op.context = 1024;
        op.head_dim = 128;
        op.k_path = path;
        op.mode = TransformMode::full;
        op.k_repr = repr;
        RunOutcome r = run(op, quick_options(seed));
        EXPECT_EQ(r.status, TP_OK) << r.message;
        EXPECT_EQ(r.result.passed, 1) << op.variant_label();
        EXPECT_EQ(r.result.gate_rows_checked, op.batch * op.kv_heads);
        for (double x : {r.result.gate_rel_l2.worst, r.result.gate_rel_l2.median, r.result.gate_max_abs.worst,
                         r.result.gate_kl.worst, r.result.gate_top8.worst})
          EXPECT_TRUE(std::isfinite(x)) << op.variant_label();
        const tp_result res = r.result;
        load_cpu_plugin()->release_result(&r.result);
        return res;
      };
      const tp_result plain = gate(KRepr::plain), mx = gate(KRepr::mxfp8);
      const std::string label = std::string(to_string(path)) + " seed " + std::to_string(seed);
      if (std::getenv("TILEPATH_TEST_VERBOSE"))
        std::printf("%-24s gate rel_l2 worst/median: plain %.4f/%.4f mxfp8 %.4f/%.4f  kl worst plain %.2e mxfp8 %.2e\n",
                    label.c_str(), plain.gate_rel_l2.worst, plain.gate_rel_l2.median, mx.gate_rel_l2.worst,
                    mx.gate_rel_l2.median, plain.gate_kl.worst, mx.gate_kl.worst);
      // Measured (2026-12-01, seeds 1-3): worst mxfp8/plain 1.10-1.20 (transform), 1.02-1.06
      // (fp8_qk); medians 1.02-1.13. The lower bound catches a gate that skipped the quantization.
      EXPECT_GE(mx.gate_rel_l2.worst, 0.8 * plain.gate_rel_l2.worst) << label;
      EXPECT_LE(mx.gate_rel_l2.worst, 1.5 * plain.gate_rel_l2.worst) << label;
      EXPECT_LE(mx.gate_rel_l2.median, 1.5 * plain.gate_rel_l2.median) << label;
    }
  }
}

TEST(CpuBackend, GqaRatios) {
  for (int group : {1, 4, 8}) {
    OperatingPoint op = small_op();
    op.kv_heads = 2;
    op.q_heads = 2 * group;
    expect_passes(op, "gqa " + std::to_string(group));
    op.k_path = KPath::fp8_qk;
    op.mode = TransformMode::k_only;
    expect_passes(op, "gqa fp8_qk " + std::to_string(group));
  }
}

TEST(CpuBackend, HeadDims) {
  for (int head_dim : {64, 128, 256}) {
    OperatingPoint op = small_op();
    op.head_dim = head_dim;
    expect_passes(op, "head_dim " + std::to_string(head_dim));
  }
}

TEST(CpuBackend, PageSizes) {
  for (int page : {1, 16, 256}) {
    OperatingPoint op = small_op();
    op.page_size = page;
    op.context = 300;
    expect_passes(op, "page " + std::to_string(page));
  }
}

TEST(CpuBackend, RaggedBatch) {
  OperatingPoint op = small_op();
  op.page_size = 16;
  op.context_lengths = {1, 15, 17, 100, 64, 129};  // 1, P-1, P+1, not a tile multiple, one tile, tile+1
  op.batch = static_cast<int>(op.context_lengths.size());
  op.context = 129;
  expect_passes(op, "ragged");
  op.splits = 3;
  expect_passes(op, "ragged, 3 splits");
}

TEST(CpuBackend, SplitsGiveTheSameOutput) {
  OperatingPoint op = small_op();
  op.batch = 1;
  op.context = 1000;
  std::vector<std::vector<float>> outputs;
  for (int splits : {1, 3, 0}) {
    op.splits = splits;
    RunOutcome r = run(op, quick_options(), /*keep_output=*/true);
    ASSERT_EQ(r.status, TP_OK) << r.message;
    if (splits == 3) {
      EXPECT_EQ(r.result.splits, 3);
    }
    if (splits == 0) {
      EXPECT_GE(r.result.splits, 1);
    }
    EXPECT_EQ(r.result.grid[2], r.result.splits);
    ASSERT_EQ(r.out.size(), static_cast<std::size_t>(op.batch * op.q_heads * op.head_dim));
    outputs.push_back(r.out);
    load_cpu_plugin()->release_result(&r.result);
  }
  std::vector<double> as_reference(outputs[0].begin(), outputs[0].end());
  for (std::size_t i = 1; i < outputs.size(); ++i) {
    const auto stats = numerics::compare(outputs[i], as_reference);
    EXPECT_LE(stats.rel_l2, numerics::default_tolerance(op)) << "split variant " << i;
  }
}

TEST(CpuBackend, SavedOutputMatchesTheReferenceAndCorruptionIsCaught) {
  OperatingPoint op = small_op();
  RunOutcome r = run(op, quick_options(11), /*keep_output=*/true);
  ASSERT_EQ(r.status, TP_OK) << r.message;
  load_cpu_plugin()->release_result(&r.result);
  // The same seed regenerates the same problem here, in the test.
  const auto problem = numerics::make_problem(op, 11);
  const auto reference = numerics::reference_decode(problem);
  const auto good = numerics::compare(r.out, reference);
  EXPECT_LE(good.rel_l2, numerics::default_tolerance(op));
  EXPECT_NEAR(good.rel_l2, r.result.rel_l2_error, 1e-12);

  // Corrupt one (request, q head) row: as if a kernel dropped one head's tile.
  std::vector<float> corrupted = r.out;
  for (int d = 0; d < op.head_dim; ++d) corrupted[3 * op.head_dim + d] *= -1.0f;
  EXPECT_GT(numerics::compare(corrupted, reference).rel_l2, numerics::default_tolerance(op));
}

TEST(CpuBackend, CancelFlagStopsTheRun) {
  OperatingPoint op = small_op();
  tp_run_options o = quick_options();
  volatile int32_t cancel = 1;
  o.cancel = &cancel;
  RunOutcome r = run(op, o);
  EXPECT_EQ(r.status, TP_ERR_CANCELLED) << r.message;
  EXPECT_NE(r.message.find("cancel"), std::string::npos);
}

TEST(CpuBackend, ProgressReportsAndCanCancel) {
  struct Log {
    std::vector<double> fractions;
    int cancel_after = -1;
  };
  auto callback = [](void* user, double fraction, const char* phase) -> int {
    auto* log = static_cast<Log*>(user);
    EXPECT_NE(phase, nullptr);
    log->fractions.push_back(fraction);
    return log->cancel_after >= 0 && static_cast<int>(log->fractions.size()) > log->cancel_after ? 1 : 0;
  };
  OperatingPoint op = small_op();
  tp_run_options o = quick_options();
  o.repeats = 3;
  o.progress = callback;
  Log log;
  o.progress_user = &log;
  RunOutcome r = run(op, o);
  ASSERT_EQ(r.status, TP_OK) << r.message;
  load_cpu_plugin()->release_result(&r.result);
  ASSERT_GE(log.fractions.size(), 3u);
  for (std::size_t i = 0; i < log.fractions.size(); ++i) {
    EXPECT_GE(log.fractions[i], 0.0);
    EXPECT_LE(log.fractions[i], 1.0);
    if (i > 0) {
      EXPECT_GE(log.fractions[i], log.fractions[i - 1]);
    }
  }

  Log cancelling;
  cancelling.cancel_after = 2;
  o.progress_user = &cancelling;
  RunOutcome stopped = run(op, o);
  EXPECT_EQ(stopped.status, TP_ERR_CANCELLED) << stopped.message;
  EXPECT_EQ(cancelling.fractions.size(), 3u);  // no callback after the one that asked to stop
}

TEST(CpuBackend, InvalidCaseNamesTheField) {
  OperatingPoint op = small_op();
  op.head_dim = 96;
  RunOutcome r = run(op, quick_options());
  EXPECT_EQ(r.status, TP_ERR_INVALID);
  EXPECT_NE(r.message.find("head_dim"), std::string::npos) << r.message;

  op = small_op(KvDtype::k16v8);
  op.k_path = KPath::fp8_qk;
  r = run(op, quick_options());
  EXPECT_EQ(r.status, TP_ERR_INVALID);
  EXPECT_NE(r.message.find("k_path"), std::string::npos) << r.message;

  tp_case c = to_tp_case(small_op());
  c.kv_dtype = 9;
  char why[512] = "";
  EXPECT_EQ(load_cpu_plugin()->supports(0, &c, why, sizeof why), 0);
  EXPECT_NE(std::string(why).find("kv"), std::string::npos) << why;
}

TEST(CpuBackend, SizeCapIsNamed) {
  OperatingPoint op = small_op();
  op.batch = 64;
  op.context = 8192;
  op.kv_heads = 8;
  op.q_heads = 32;
  op.head_dim = 128;
  const tp_case c = to_tp_case(op);
  char why[512] = "";
  EXPECT_EQ(load_cpu_plugin()->supports(0, &c, why, sizeof why), 0);
  EXPECT_NE(std::string(why).find("kMaxKvElements"), std::string::npos) << why;
  tp_result result{};
  result.struct_size = sizeof result;
  tp_run_options o = quick_options();
  EXPECT_EQ(load_cpu_plugin()->run_case(0, &c, &o, &result), TP_ERR_UNSUPPORTED);

  op.context = 4096;  // the default-sized case is inside the cap
  const tp_case fits = to_tp_case(op);
  EXPECT_EQ(load_cpu_plugin()->supports(0, &fits, why, sizeof why), 1) << why;
}

// The cpu backend emulates mma_sync's numerics (FP32 accumulation); wgmma's FP8
// accumulation is not documented bit-exactly, so a wgmma case is refused on both devices,
// naming the field and the value it allows, and the same case on mma_sync runs.
TEST(CpuBackend, WgmmaIsRefusedNamingTheField) {
  const std::string expected =
      "mma: the cpu backend emulates mma_sync's numerics (FP32 accumulation); wgmma's FP8 accumulation is not "
      "documented bit-exactly, so it cannot be emulated; allowed: mma_sync";
  OperatingPoint op = small_op();
  op.k_path = KPath::fp8_qk;
  op.mma = Mma::wgmma;
  const tp_case c = to_tp_case(op);
  for (int device : {0, 1}) {
    SCOPED_TRACE(device);
    char why[512] = "";
    EXPECT_EQ(load_cpu_plugin()->supports(device, &c, why, sizeof why), 0);
    EXPECT_EQ(std::string(why), expected);
    tp_result result{};
    result.struct_size = sizeof result;
    tp_run_options o = quick_options();
    EXPECT_EQ(load_cpu_plugin()->run_case(device, &c, &o, &result), TP_ERR_UNSUPPORTED);
    EXPECT_EQ(std::string(result.message), expected);
    load_cpu_plugin()->release_result(&result);
  }
  op.mma = Mma::mma_sync;
  expect_passes(op, "fp8_qk on mma_sync");
}

TEST(CpuBackend, PerHeadAndPerTensorScalesPass) {
  for (ScaleGranularity scale : {ScaleGranularity::per_head, ScaleGranularity::per_tensor}) {
    OperatingPoint op = small_op();
    op.scale = scale;
    expect_passes(op, std::string(to_string(scale)));
    op.k_path = KPath::fp8_qk;
    expect_passes(op, std::string(to_string(scale)) + " fp8_qk");
  }
}

TEST(CpuBackend, AblationsFillTileIntervalStageCostsAndSamples) {
  OperatingPoint op = small_op(KvDtype::k16v8);  // no k_prep in this variant
  op.context = 512;
  op.splits = 2;
  tp_run_options o = quick_options();
  o.repeats = 3;
  o.ablations = TP_ABLATE_STAGE_COSTS | TP_ABLATE_TILE_INTERVAL;
  RunOutcome r = run(op, o);
  ASSERT_EQ(r.status, TP_OK) << r.message;
  const tp_result& res = r.result;
  EXPECT_EQ(res.repeats, 3);
  EXPECT_EQ(res.tile_tokens, 64);
  EXPECT_TRUE(std::isfinite(res.tile_interval_us));
  EXPECT_LE(res.latency_min_us, res.latency_us);
  EXPECT_LE(res.latency_us, res.latency_max_us);
  EXPECT_DOUBLE_EQ(res.bytes_moved, op.bytes_moved());
  EXPECT_GT(res.read_bandwidth_gbps, 0.0);
  EXPECT_NEAR(res.floor_fraction, res.bytes_moved / (res.read_bandwidth_gbps * 1e3) / res.latency_us, 1e-9);
  EXPECT_STREQ(res.kernel_name, "cpu_decode<k16v8,k16,full,d64>");
  EXPECT_EQ(res.grid[0], op.batch);
  EXPECT_EQ(res.grid[1], op.kv_heads);
  EXPECT_EQ(res.splits, 2);
  for (int s : {TP_STAGE_K_LOAD, TP_STAGE_QK, TP_STAGE_SOFTMAX, TP_STAGE_V_LOAD, TP_STAGE_V_PREP, TP_STAGE_PV,
                TP_STAGE_ACCUM, TP_STAGE_COMBINE}) {
    EXPECT_TRUE(std::isfinite(stage_cost(res, TP_COST_ISOLATED, s))) << s;
    EXPECT_GE(stage_cost(res, TP_COST_ISOLATED, s), 0.0) << s;
    EXPECT_TRUE(std::isfinite(stage_cost(res, TP_COST_REMOVED, s))) << s;
  }
  for (int s : {TP_STAGE_K_PREP, TP_STAGE_Q_QUANT}) {
    EXPECT_TRUE(std::isnan(stage_cost(res, TP_COST_ISOLATED, s))) << s;
    EXPECT_TRUE(std::isnan(stage_cost(res, TP_COST_REMOVED, s))) << s;
  }
  for (int s : {TP_STAGE_QK, TP_STAGE_PV, TP_STAGE_COMBINE})
    EXPECT_TRUE(std::isfinite(stage_cost(res, TP_COST_DOUBLED, s))) << s;
  EXPECT_TRUE(std::isnan(stage_cost(res, TP_COST_DOUBLED, TP_STAGE_K_PREP)));
  EXPECT_TRUE(std::isnan(stage_cost(res, TP_COST_MODEL, TP_STAGE_QK))) << "a measuring backend predicts nothing";

  ASSERT_EQ(res.artifact_count, 1);
  EXPECT_STREQ(res.artifacts[0].name, "samples.json");
  const auto samples =
      nlohmann::json::parse(std::string(reinterpret_cast<const char*>(res.artifacts[0].data), res.artifacts[0].size));
  EXPECT_EQ(samples["latency_us"].size(), 3u);
  EXPECT_EQ(samples["half_context_latency_us"].size(), 3u);
  EXPECT_TRUE(samples["removed_latency_us"].contains("qk"));
  EXPECT_FALSE(samples["removed_latency_us"].contains("k_prep"));
  EXPECT_EQ(samples["doubled_latency_us"]["softmax"].size(), 3u);
  EXPECT_GT(res.metric_count, 0);

  tp_result copy = r.result;
  load_cpu_plugin()->release_result(&r.result);
  EXPECT_EQ(r.result.metrics, nullptr);
  load_cpu_plugin()->release_result(&r.result);  // idempotent
  (void)copy;
}

TEST(CpuBackend, OlderShorterOptionsStructIsHonoured) {
  // A host built before save_tensors_dir/progress/cancel existed: those fields are not read.
  tp_run_options o = quick_options();
  o.struct_size = offsetof(tp_run_options, save_tensors_dir);
  volatile int32_t cancel = 1;
  o.cancel = &cancel;
  RunOutcome r = run(small_op(), o);
  EXPECT_EQ(r.status, TP_OK) << r.message;
  EXPECT_EQ(r.result.repeats, 1);
  load_cpu_plugin()->release_result(&r.result);

  // No options at all: the documented defaults (5 warm-up, 20 timed).
  const tp_case c = to_tp_case(small_op());
  tp_result result{};
  result.struct_size = sizeof result;
  ASSERT_EQ(load_cpu_plugin()->run_case(0, &c, nullptr, &result), TP_OK) << result.message;
  EXPECT_EQ(result.repeats, 20);
  load_cpu_plugin()->release_result(&result);
}

TEST(CpuBackend, PreRopeLayoutRotatesInKPrep) {
  OperatingPoint op = small_op();
  op.rope = RopeLayout::pre_rope;
  op.k_repr = KRepr::prebias;
  expect_passes(op, "pre_rope prebias");  // the reference rotates; an unrotating kernel fails by far
  op.k_repr = KRepr::plain;
  op.mode = TransformMode::k_only;
  expect_passes(op, "pre_rope k_only");

  for (KvDtype kv : {KvDtype::k16v8, KvDtype::k8v8}) {
    OperatingPoint other = small_op(kv);
    other.rope = RopeLayout::pre_rope;
    if (kv == KvDtype::k8v8) other.k_path = KPath::fp8_qk;
    const tp_case c = to_tp_case(other);
    char why[512] = "";
    EXPECT_EQ(load_cpu_plugin()->supports(0, &c, why, sizeof why), 0) << other.variant_label();
    EXPECT_NE(std::string(why).find("rope"), std::string::npos) << why;
  }
}

// Two verdicts per case: the kernel check (its own arithmetic, which decides `passed`)
// and the gate on the case's own inputs against full precision, on every checked row.
TEST(CpuBackend, GateOnTheCasesOwnInputsComesWithTheKernelCheck) {
  OperatingPoint op = small_op();
  op.k_path = KPath::fp8_qk;
  op.mode = default_mode(op.kv, op.k_path);
  RunOutcome r = run(op, quick_options());
  ASSERT_EQ(r.status, TP_OK) << r.message;
  const tp_result& res = r.result;
  EXPECT_EQ(res.passed, 1);
  EXPECT_STREQ(res.key_distribution, "gaussian");
  EXPECT_EQ(res.check_rows_total, op.batch * op.kv_heads);
  EXPECT_EQ(res.check_rows_checked, res.check_rows_total) << "a small case checks every row";
  EXPECT_EQ(res.gate_rows_checked, res.check_rows_checked) << "the gate compares the rows the check verified";
  EXPECT_EQ(res.gate_rows_total, res.check_rows_total);
  // fp8_qk's check rounds Q in its reference too; against the BF16 query it is further off.
  EXPECT_GT(res.gate_rel_l2.worst, 5 * res.rel_l2_error);
  EXPECT_LE(res.gate_rel_l2.median, res.gate_rel_l2.worst);
  EXPECT_GT(res.gate_kl.worst, 0.0);
  EXPECT_LE(res.gate_top8.worst, 1.0);
  EXPECT_GT(res.gate_top8.worst, 0.0);
  EXPECT_TRUE(std::isfinite(res.gate_max_abs.worst));
  load_cpu_plugin()->release_result(&r.result);
}

// Qwen-like keys through the real kernels: the kernel check passes for every
// representation (each computes its own arithmetic), the gate tells them apart.
TEST(CpuBackend, QwenBiasKeysFailTheGatePlainAndPassItWithTheModelsBias) {
  auto gate_kl = [](const OperatingPoint& op) {
    tp_run_options o = quick_options(3);
    o.key_distribution = "qwen_bias";
    RunOutcome r = run(op, o);
    EXPECT_EQ(r.status, TP_OK) << r.message;
    EXPECT_EQ(r.result.passed, 1) << op.variant_label() << ": the kernel check";
    EXPECT_STREQ(r.result.key_distribution, "qwen_bias");
    const double kl = r.result.gate_kl.worst;
    load_cpu_plugin()->release_result(&r.result);
    return kl;
  };
  const double kl_threshold = 0.005;  // numerics::GateThresholds{}.kl
  for (RopeLayout rope : {RopeLayout::post_rope, RopeLayout::pre_rope}) {
    OperatingPoint op = small_op();
    op.context = 512;
    op.head_dim = 128;
    op.rope = rope;
    const double plain = gate_kl(op);
    op.k_repr = KRepr::prebias;
    const double prebias = gate_kl(op);
    EXPECT_GT(plain, kl_threshold) << to_string(rope);
    EXPECT_LT(prebias, kl_threshold) << to_string(rope);
    if (rope == RopeLayout::post_rope) {
      // The score-space correction q.RoPE_t(b) restores the bias for fp8_qk.
      op.k_path = KPath::fp8_qk;
      op.mode = default_mode(op.kv, op.k_path);
      EXPECT_LT(gate_kl(op), plain);
    }
  }
}

// A post-RoPE prebias cache restores its bias in its own stage, k_bias, between qk and
// softmax: measured like the others there, absent from a plain or pre-RoPE case.
TEST(CpuBackend, PostRopePrebiasHasAMeasuredKBiasStage) {
  tp_run_options o = quick_options(3);
  o.key_distribution = "qwen_bias";
  o.ablations = TP_ABLATE_STAGE_COSTS;
  for (KPath path : {KPath::transform, KPath::fp8_qk}) {
    OperatingPoint op = small_op();
    op.k_path = path;
    op.mode = default_mode(op.kv, path);
    op.k_repr = KRepr::prebias;
    RunOutcome r = run(op, o);
    ASSERT_EQ(r.status, TP_OK) << r.message;
    EXPECT_EQ(r.result.passed, 1) << op.variant_label();
    for (int method : {TP_COST_ISOLATED, TP_COST_REMOVED, TP_COST_DOUBLED})
      EXPECT_TRUE(std::isfinite(stage_cost(r.result, method, TP_STAGE_K_BIAS))) << op.variant_label() << method;
    EXPECT_GT(stage_cost(r.result, TP_COST_ISOLATED, TP_STAGE_K_BIAS), 0.0);
    load_cpu_plugin()->release_result(&r.result);

    for (KRepr repr : {KRepr::plain, KRepr::prebias}) {
      OperatingPoint other = op;
      other.k_repr = repr;
      if (repr == KRepr::prebias) {
        if (path != KPath::transform) continue;  // pre-RoPE needs k_prep to rotate
        other.rope = RopeLayout::pre_rope;       // the bias goes back into K, in k_prep
      }
      RunOutcome without = run(other, o);
      ASSERT_EQ(without.status, TP_OK) << without.message;
      EXPECT_TRUE(std::isnan(stage_cost(without.result, TP_COST_ISOLATED, TP_STAGE_K_BIAS))) << other.variant_label();
      load_cpu_plugin()->release_result(&without.result);
    }
  }
}

TEST(CpuBackend, UnknownKeyDistributionIsNamed) {
  tp_run_options o = quick_options();
  o.key_distribution = "uniform";
  RunOutcome r = run(small_op(), o);
  EXPECT_EQ(r.status, TP_ERR_INVALID);
  EXPECT_NE(r.message.find("key_distribution"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("qwen_bias"), std::string::npos) << r.message;
}

// The file with the sources (models/keys/qwen_bias.json) is what the plugin generates keys
// from: its text through tp_run_options.key_model_json, or the copy the build embedded.
std::string shipped_key_file(const std::string& stem) {
  std::ifstream in(std::string(TILEPATH_SOURCE_DIR) + "/models/keys/" + stem + ".json", std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The exact bias a prebias K8/V8 case keeps (k_bias.npy), generated from `key_model_json`.
std::vector<float> prebias_bias(const char* key_model_json, std::string* message = nullptr) {
  const tp_backend_api* api = load_cpu_plugin();
  if (api == nullptr) return {};
  OperatingPoint op = small_op();
  op.k_repr = KRepr::prebias;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tilepath_cpu_key_model_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string dir_text = dir.string();
  tp_run_options o = quick_options();
  o.key_distribution = "qwen_bias";
  o.key_model_json = key_model_json;
  o.save_tensors_dir = dir_text.c_str();
  const tp_case c = to_tp_case(op);
  tp_result result{};
  result.struct_size = sizeof result;
  const int status = api->run_case(0, &c, &o, &result);
  if (message != nullptr) *message = result.message;
  std::vector<float> bias;
  if (status == TP_OK) bias = read_npy_f4(dir / "k_bias.npy");
  api->release_result(&result);
  std::filesystem::remove_all(dir);
  return bias;
}

TEST(CpuBackend, KeyModelJsonSetsTheGeneratedKeys) {
  const std::string shipped = shipped_key_file("qwen_bias");
  ASSERT_FALSE(shipped.empty());
  const std::vector<float> from_file = prebias_bias(shipped.c_str());
  ASSERT_FALSE(from_file.empty());
  // No JSON: the built-in copy, the same file's values.
  EXPECT_EQ(prebias_bias(nullptr), from_file);

  // An edited copy: every biased channel's magnitude becomes 7 residual stds.
  nlohmann::json edited = nlohmann::json::parse(shipped);
  edited["bias_min_std"]["value"] = 7;
  edited["bias_max_std"]["value"] = 7;
  const std::string edited_text = edited.dump();
  const std::vector<float> from_edit = prebias_bias(edited_text.c_str());
  ASSERT_EQ(from_edit.size(), from_file.size());
  EXPECT_NE(from_edit, from_file);
  int biased = 0;
  for (float b : from_edit) {
    if (b == 0.0f) continue;
    ++biased;
    EXPECT_EQ(std::fabs(b), 7.0f);
  }
  EXPECT_EQ(biased, 2 * edited["bias_channels_per_head"]["value"].get<int>());  // small_op: 2 kv heads

  // A file of another kind for these keys is refused, naming the field.
  std::string message;
  EXPECT_TRUE(prebias_bias(shipped_key_file("gaussian").c_str(), &message).empty());
  EXPECT_NE(message.find("key_model_json"), std::string::npos) << message;
}

// Launch counts are checked at the ABI boundary too: 2^31-1 warm-ups and repeats had
// overflowed the progress arithmetic and crashed the plugin.
TEST(CpuBackend, LaunchCountsOutOfRangeAreRefusedNamingTheField) {
  for (auto [warmup, repeats, field] : {std::tuple{INT32_MAX, 1, "warmup"}, std::tuple{0, INT32_MAX, "repeats"},
                                        std::tuple{-1, 1, "warmup"}, std::tuple{0, TP_MAX_LAUNCHES + 1, "repeats"}}) {
    tp_run_options o = quick_options();
    o.warmup = warmup;
    o.repeats = repeats;
    RunOutcome r = run(small_op(), o);
    EXPECT_EQ(r.status, TP_ERR_INVALID) << field;
    EXPECT_EQ(r.message.rfind(field, 0), 0u) << r.message;
    EXPECT_NE(r.message.find(std::to_string(TP_MAX_LAUNCHES)), std::string::npos) << r.message;
  }
}

// Device 1 emulates gfx942's numerics: the cache re-encoded to E4M3 FNUZ (exact, scales
// doubled), Q and k_only's P quantized to FNUZ. Every plain variant passes its kernel check
// there; where neither Q nor P is quantized the output is the OCP device's bit for bit (the
// FNUZ decode gives the same values), and where Q is quantized (fp8_qk) it is not.
TEST(CpuBackend, Gfx942NumericsDeviceRunsEveryPlainVariant) {
  int identical = 0, different = 0;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (KPath path : valid_k_paths(kv)) {
      for (TransformMode mode : valid_modes(kv, path)) {
        OperatingPoint op = small_op(kv);
        op.k_path = path;
        op.mode = mode;
        SCOPED_TRACE(op.variant_label());
        RunOutcome ocp = run(op, quick_options(11), /*keep_output=*/true, 0);
        RunOutcome fnuz = run(op, quick_options(11), /*keep_output=*/true, 1);
        ASSERT_EQ(fnuz.status, TP_OK) << fnuz.message;
        ASSERT_EQ(ocp.status, TP_OK) << ocp.message;
        EXPECT_LE(fnuz.result.rel_l2_error, fnuz.result.tolerance);
        ASSERT_EQ(fnuz.out.size(), ocp.out.size());
        const bool quantizes = path == KPath::fp8_qk || (v_is_fp8(kv) && mode == TransformMode::k_only);
        if (quantizes) {
          EXPECT_NE(fnuz.out, ocp.out) << "Q or P quantized to FNUZ must change the output";
          ++different;
        } else {
          EXPECT_EQ(fnuz.out, ocp.out) << "the FNUZ cache holds the same values";
          ++identical;
        }
        load_cpu_plugin()->release_result(&ocp.result);
        load_cpu_plugin()->release_result(&fnuz.result);
      }
    }
  }
  EXPECT_EQ(identical, 7);  // k16v16; k8v16 transform x2; k16v8 x2; k8v8 transform full, separate_kv
  EXPECT_EQ(different, 5);  // k8v16 fp8_qk; k8v8 transform k_only, fp8_qk x3
}

TEST(CpuBackend, Gfx942NumericsDeviceRefusesWhatTheHipKernelsDoNotRunNamingTheField) {
  const tp_backend_api* api = load_cpu_plugin();
  ASSERT_NE(api, nullptr);
  OperatingPoint op = small_op(KvDtype::k8v8);
  op.k_repr = KRepr::prebias;
  const tp_case c = to_tp_case(op);
  char why[256] = "";
  EXPECT_EQ(api->supports(0, &c, why, sizeof why), 1) << why;
  EXPECT_EQ(api->supports(1, &c, why, sizeof why), 0);
  EXPECT_NE(std::string(why).find("k_repr"), std::string::npos) << why;
  EXPECT_NE(std::string(why).find("allowed: plain"), std::string::npos) << why;
  RunOutcome r = run(op, quick_options(), false, 1);
  EXPECT_EQ(r.status, TP_ERR_UNSUPPORTED) << r.message;
  EXPECT_EQ(api->supports(2, &c, why, sizeof why), 0);
  EXPECT_NE(std::string(why).find("does not exist"), std::string::npos) << why;
}
