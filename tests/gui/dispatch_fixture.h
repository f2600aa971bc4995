#pragma once
// A run database for the dispatch view, written through the real RunStore, whose
// winners the tests know. Three variants — K16/V16 (the speed-up's reference),
// K8/V8 transform/full ("A") and K8/V8 fp8_qk/k_only ("B") — at B ∈ {1, 16} ×
// S ∈ {1024, 4096, 16384}:
//
//   hbm_cold   S=1024        S=4096        S=16384       (latency µs: A, B, K16/V16)
//   B=1        A 10,12,20    A 20,22,40    B 50,40,100
//   B=16       B 30,25,50    B 60,50,—     B 150,120,360
//
// so three crossovers: along context at B=1 (between 4096 and 16384) and along batch at
// S=1024 and S=4096 (between 1 and 16). l2_warm: A wins everywhere, no crossover.
// Every case has a passing "random" row (the speed run's kernel check) and a passing
// "gaussian" row; on "qwen_bias" B fails and the others pass.

#include <map>
#include <string>
#include <tuple>

#include "core/store/run_store.h"

namespace tilepath::test {

inline const std::string kDispatchA = "k8v8/transform/full";
inline const std::string kDispatchB = "k8v8/fp8_qk/k_only";
inline const std::string kDispatchK16 = "k16v16/k16";

// (cache, batch, context, variant label) -> case id
using DispatchFixtureIds = std::map<std::tuple<CacheState, int, int, std::string>, std::int64_t>;

inline DispatchFixtureIds writeDispatchFixture(const std::string& path) {
  struct Point {
    int batch, context;
    double a, b, k16;  // latency µs; < 0 = not measured
  };
  const Point cold[] = {{1, 1024, 10, 12, 20},  {1, 4096, 20, 22, 40},  {1, 16384, 50, 40, 100},
                        {16, 1024, 30, 25, 50}, {16, 4096, 60, 50, -1}, {16, 16384, 150, 120, 360}};
  RunStore store = RunStore::open(path);
  RunInfo run;
  run.backend = "fixture";
  run.backend_version = "1";
  run.device = "Fixture GPU";
  run.command = "dispatch fixture";
  const std::int64_t run_id = store.begin_run(run);
  DispatchFixtureIds ids;
  for (CacheState cache : {CacheState::hbm_cold, CacheState::l2_warm}) {
    for (const Point& p : cold) {
      const bool warm = cache == CacheState::l2_warm;
      // Warm: A fastest everywhere (B and K16/V16 slower by fixed factors).
      const double a = warm ? 0.5 * p.a : p.a;
      const double b = warm ? 0.6 * p.a : p.b;
      const double k16 = warm ? p.a : p.k16;
      struct Variant {
        KvDtype kv;
        KPath path;
        TransformMode mode;
        double latency_us;
        bool qwen_bias_passes;
      };
      const Variant variants[] = {{KvDtype::k8v8, KPath::transform, TransformMode::full, a, true},
                                  {KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, b, false},
                                  {KvDtype::k16v16, KPath::k16, TransformMode::none, k16, true}};
      for (const Variant& v : variants) {
        if (v.latency_us < 0) continue;
        CaseRecord rec;
        rec.op.batch = p.batch;
        rec.op.context = p.context;
        rec.op.cache = cache;
        rec.op.kv = v.kv;
        rec.op.k_path = v.path;
        rec.op.mode = v.mode;
        rec.status = CaseStatus::ok;
        rec.measurements = {{"latency_us", v.latency_us, "us"}};
        rec.quality = {{"rel_l2", 0.002, 0.006, true, "random"},
                       {"rel_l2", 0.01, 0.05, true, "gaussian"},
                       {"rel_l2", v.qwen_bias_passes ? 0.02 : 0.09, 0.05, v.qwen_bias_passes, "qwen_bias"}};
        const std::int64_t id = store.add_case(run_id, rec);
        ids[{cache, p.batch, p.context, rec.op.variant_label()}] = id;
      }
    }
  }
  store.finish_run(run_id);
  return ids;
}

}  // namespace tilepath::test
