// Compiled by clang++-19 as host C++ (tests/hip/CMakeLists.txt): the kernel headers with
// the amdgcn builtins replaced by the lane-by-lane emulation below.
#include "tests/hip/kernel_host_emulation.h"

#include <array>
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

#include "core/numerics/fp8.h"
#include "core/numerics/fp8_fnuz.h"

namespace tilepath::hip::emulation {

using f32x2 = float __attribute__((ext_vector_type(2)));
using f32x4 = float __attribute__((ext_vector_type(4)));
using i16x4 = short __attribute__((ext_vector_type(4)));

constexpr int kLanes = 64;
constexpr int kWorkgroupWaves = 4;

// ---- one workgroup: 4 waves of 64 host threads --------------------------------
struct Wave {
  std::barrier<> sync{kLanes};
  std::array<int, kLanes> words{};
  std::array<long, kLanes> a8{}, b8{};
  std::array<i16x4, kLanes> a16{}, b16{};
};
struct Workgroup {
  std::barrier<> sync{kLanes * kWorkgroupWaves};
  Wave waves[kWorkgroupWaves];
  unsigned id[3] = {0, 0, 0};
};

thread_local Workgroup* tl_group = nullptr;
thread_local int tl_thread = 0;

Wave& my_wave() { return tl_group->waves[tl_thread / kLanes]; }
int my_lane() { return tl_thread % kLanes; }

unsigned workitem_id_x() { return static_cast<unsigned>(tl_thread); }
unsigned workgroup_id(int d) { return tl_group->id[d]; }

int ds_bpermute(int address, int value) {
  Wave& w = my_wave();
  w.words[my_lane()] = value;
  w.sync.arrive_and_wait();
  const int r = w.words[(address >> 2) & (kLanes - 1)];
  w.sync.arrive_and_wait();
  return r;
}

void wave_barrier() { my_wave().sync.arrive_and_wait(); }
void workgroup_barrier() { tl_group->sync.arrive_and_wait(); }
void fence_wavefront_or_workgroup(const char* scope) {
  // A wave's LDS slot handover (wave_lds_sync) is a wave-wide rendezvous here; the
  // workgroup fences around s_barrier need nothing beyond the barrier itself.
  if (std::strcmp(scope, "wavefront") == 0) wave_barrier();
}

std::uint8_t byte_of(long v, int i) { return static_cast<std::uint8_t>(static_cast<unsigned long>(v) >> (8 * i)); }

// D = A·B + C for 16x16x32 FNUZ: lane l holds A[l%16][8(l/16)..+7], B[8(l/16)..+7][l%16],
// D[4(l/16)..+3][l%16].
f32x4 mfma_fp8(long a, long b, f32x4 c, int, int, int) {
  Wave& w = my_wave();
  const int lane = my_lane();
  w.a8[lane] = a, w.b8[lane] = b;
  w.sync.arrive_and_wait();
  f32x4 d = c;
  for (int i = 0; i < 4; ++i) {
    const int row = 4 * (lane / 16) + i, col = lane % 16;
    float sum = 0.0f;
    for (int k = 0; k < 32; ++k) {
      sum += numerics::e4m3_fnuz_to_float(byte_of(w.a8[row + 16 * (k / 8)], k % 8)) *
             numerics::e4m3_fnuz_to_float(byte_of(w.b8[col + 16 * (k / 8)], k % 8));
    }
    d[i] += sum;
  }
  w.sync.arrive_and_wait();
  return d;
}

// D = A·B + C for 16x16x16 BF16: lane l holds A[l%16][4(l/16)..+3], B[4(l/16)..+3][l%16].
f32x4 mfma_bf16(i16x4 a, i16x4 b, f32x4 c, int, int, int) {
  Wave& w = my_wave();
  const int lane = my_lane();
  w.a16[lane] = a, w.b16[lane] = b;
  w.sync.arrive_and_wait();
  f32x4 d = c;
  for (int i = 0; i < 4; ++i) {
    const int row = 4 * (lane / 16) + i, col = lane % 16;
    float sum = 0.0f;
    for (int k = 0; k < 16; ++k) {
      sum += numerics::bf16_to_float(static_cast<std::uint16_t>(w.a16[row + 16 * (k / 4)][k % 4])) *
             numerics::bf16_to_float(static_cast<std::uint16_t>(w.b16[col + 16 * (k / 4)][k % 4]));
    }
    d[i] += sum;
  }
  w.sync.arrive_and_wait();
  return d;
}

f32x2 cvt_pk_f32_fp8(int word, bool high) {
  const unsigned u = static_cast<unsigned>(word) >> (high ? 16 : 0);
  return f32x2{numerics::e4m3_fnuz_to_float(static_cast<std::uint8_t>(u)),
               numerics::e4m3_fnuz_to_float(static_cast<std::uint8_t>(u >> 8))};
}

int cvt_pk_fp8_f32(float a, float b, int old, bool high) {
  const unsigned pair = numerics::float_to_e4m3_fnuz(a) | (unsigned(numerics::float_to_e4m3_fnuz(b)) << 8);
  const unsigned keep = static_cast<unsigned>(old) & (high ? 0x0000FFFFu : 0xFFFF0000u);
  return static_cast<int>(keep | (pair << (high ? 16 : 0)));
}

float fmed3(float x, float lo, float hi) { return std::fmin(std::fmax(x, lo), hi); }

}  // namespace tilepath::hip::emulation

// ---- the kernel headers, with the builtins above -------------------------------
// (decode_launch.h brought in HIP's host definitions of these: replaced, not redefined)
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)
#define TP_WAVES_PER_EU(n)
#define __builtin_amdgcn_workitem_id_x tilepath::hip::emulation::workitem_id_x
#define __builtin_amdgcn_workgroup_id_x() tilepath::hip::emulation::workgroup_id(0)
#define __builtin_amdgcn_workgroup_id_y() tilepath::hip::emulation::workgroup_id(1)
#define __builtin_amdgcn_workgroup_id_z() tilepath::hip::emulation::workgroup_id(2)
#define __builtin_amdgcn_ds_bpermute tilepath::hip::emulation::ds_bpermute
#define __builtin_amdgcn_fence(order, scope) tilepath::hip::emulation::fence_wavefront_or_workgroup(scope)
#define __builtin_amdgcn_wave_barrier tilepath::hip::emulation::wave_barrier
#define __builtin_amdgcn_s_barrier tilepath::hip::emulation::workgroup_barrier
#define __builtin_amdgcn_exp2f std::exp2
#define __builtin_amdgcn_logf std::log2
#define __builtin_amdgcn_cvt_pk_f32_fp8 tilepath::hip::emulation::cvt_pk_f32_fp8
#define __builtin_amdgcn_cvt_pk_fp8_f32 tilepath::hip::emulation::cvt_pk_fp8_f32
#define __builtin_amdgcn_fmed3f tilepath::hip::emulation::fmed3
#define __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8 tilepath::hip::emulation::mfma_fp8
#define __builtin_amdgcn_mfma_f32_16x16x16bf16_1k tilepath::hip::emulation::mfma_bf16

#include "backends/hip/kernels/combine_kernel.h"
#include "backends/hip/kernels/decode_kernel.h"

namespace tilepath::hip::emulation {
namespace {

// Runs `body` once per thread of every workgroup of the grid, one workgroup at a time
// (the kernels' LDS is a function-static array here, shared by that workgroup's threads).
void run_grid(const unsigned (&grid)[3], int threads, const std::function<void()>& body) {
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        auto group = std::make_unique<Workgroup>();
        group->id[0] = x, group->id[1] = y, group->id[2] = z;
        std::vector<std::thread> lanes;
        for (int t = 0; t < threads; ++t)
          lanes.emplace_back([&, t] {
            tl_group = group.get();
            tl_thread = t;
            body();
          });
        for (auto& l : lanes) l.join();
      }
}

// A combine workgroup is one wave; the emulated workgroup barrier is never reached there.
void run_combine(const DecodeArgs& args) {
  const kernels::CombineParams params{args};
  const unsigned grid[3] = {static_cast<unsigned>(args.batch * args.q_heads), 1, 1};
  switch (args.head_dim) {
    case 64:
      return run_grid(grid, kLanes, [&] { kernels::combine_kernel<64>(params); });
    case 128:
      return run_grid(grid, kLanes, [&] { kernels::combine_kernel<128>(params); });
    default:
      return run_grid(grid, kLanes, [&] { kernels::combine_kernel<256>(params); });
  }
}

template <int kKv, int kPath, int kMode, int kD, int kAbl = 0, int kStage = -1>
bool try_variant(const DecodeArgs& args, const Ablation& ablation) {
  if (args.kv_dtype != kKv || args.k_path != kPath || args.mode != kMode || args.head_dim != kD) return false;
  if (int(ablation.kind) != kAbl || (kAbl != 0 && ablation.stage != kStage)) return false;
  const int group = args.q_heads / args.kv_heads;
  const int chunks = (group + kHeadsPerWorkgroup - 1) / kHeadsPerWorkgroup;
  const kernels::KernelParams params{args, chunks, 0u};
  const unsigned grid[3] = {static_cast<unsigned>(args.splits), static_cast<unsigned>(args.kv_heads * chunks),
                            static_cast<unsigned>(args.batch)};
  run_grid(grid, kLanes * kWorkgroupWaves,
           [&] { kernels::decode_attention_kernel<kKv, kPath, kMode, kD, kAbl, kStage>(params); });
  if (args.splits > 1) run_combine(args);
  return true;
}

}  // namespace

// The doubled-stage ablations of two K8/V8 families: a stage run twice must give the
// same output (its second run is data-dependent on the first through a zero salt).
template <int kKv, int kPath, int kMode>
bool try_doubled(const DecodeArgs& a, const Ablation& ab) {
  constexpr int kTwice = int(AblationKind::twice);
  return try_variant<kKv, kPath, kMode, 128, kTwice, TP_STAGE_K_PREP>(a, ab) ||
         try_variant<kKv, kPath, kMode, 128, kTwice, TP_STAGE_QK>(a, ab) ||
         try_variant<kKv, kPath, kMode, 128, kTwice, TP_STAGE_SOFTMAX>(a, ab) ||
         try_variant<kKv, kPath, kMode, 128, kTwice, TP_STAGE_V_PREP>(a, ab) ||
         try_variant<kKv, kPath, kMode, 128, kTwice, TP_STAGE_PV>(a, ab);
}

std::string run_decode(const DecodeArgs& a, const Ablation& ab) {
  const bool ran = try_variant<TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_K_ONLY, 128>(a, ab) ||
                   try_variant<TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_K_ONLY, 64>(a, ab) ||
                   try_variant<TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_FULL, 128>(a, ab) ||
                   try_variant<TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_FULL, 128>(a, ab) ||
                   try_variant<TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_K_ONLY, 64>(a, ab) ||
                   try_variant<TP_KV_K8V16, TP_KPATH_FP8_QK, TP_MODE_NONE, 128>(a, ab) ||
                   try_variant<TP_KV_K8V16, TP_KPATH_TRANSFORM, TP_MODE_FULL, 64>(a, ab) ||
                   try_variant<TP_KV_K16V8, TP_KPATH_K16, TP_MODE_FULL, 128>(a, ab) ||
                   try_variant<TP_KV_K16V16, TP_KPATH_K16, TP_MODE_NONE, 256>(a, ab) ||
                   try_variant<TP_KV_K16V16, TP_KPATH_K16, TP_MODE_NONE, 64>(a, ab) ||
                   try_doubled<TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_K_ONLY>(a, ab) ||
                   try_doubled<TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_FULL>(a, ab);
  return ran ? "" : "no emulated variant for these arguments";
}

}  // namespace tilepath::hip::emulation
