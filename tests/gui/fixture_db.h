#pragma once
// A small run database written through the real RunStore, with cases whose
// numbers the tests know: three dtype controls at two shapes (warm and cold),
// stage costs, tile intervals and errors; cold K8/V8 also has the fraction of a
// perfect stream (0.5 + context / 65536).

#include <string>

#include "core/store/run_store.h"

namespace tilepath::test {

struct FixtureCase {
  KvDtype kv;
  double latency_us;
  double tile_interval_us;
  // per-tile costs (isolated) of k_load, k_prep, qk, softmax, v_load, v_prep, pv, accum; <0 = absent
  double costs[8];
};

inline CaseRecord makeFixtureRecord(const OperatingPoint& base, const FixtureCase& f) {
  CaseRecord rec;
  rec.op = base;
  rec.op.kv = f.kv;
  rec.op.k_path = default_k_path(f.kv);
  rec.op.mode = default_mode(f.kv, rec.op.k_path);
  rec.status = CaseStatus::ok;
  rec.kernel.kernel_name = "fixture_" + std::string(to_string(f.kv));
  rec.kernel.regs_per_thread = 128;
  rec.measurements = {{"latency_us", f.latency_us, "us"},
                      {"tile_interval_us", f.tile_interval_us, "us"},
                      {"floor_fraction", 50.0 / f.latency_us, ""}};
  for (int i = 0; i < 8; ++i)
    if (f.costs[i] >= 0) rec.stage_costs.push_back({kTileStages[i], CostMethod::isolated, f.costs[i]});
  rec.quality = {{"rel_l2", 0.001 * (1 + static_cast<int>(f.kv)), 0.05, true, "gaussian"}};
  return rec;
}

// Writes the fixture into path (created). Returns the number of cases stored.
inline int writeFixtureDatabase(const std::string& path) {
  RunStore store = RunStore::open(path);
  RunInfo run;
  run.backend = "fixture";
  run.backend_version = "1";
  run.device = "Fixture GPU";
  run.device_index = 1;
  run.device_uid = "0000:00:06.0";
  run.command = "fixture";
  const std::int64_t run_id = store.begin_run(run);
  int stored = 0;
  for (CacheState cache : {CacheState::hbm_cold, CacheState::l2_warm}) {
    for (int context : {1024, 4096, 16384}) {
      OperatingPoint base;
      base.batch = 8;
      base.context = context;
      base.cache = cache;
      const double s = context / 1024.0 * (cache == CacheState::l2_warm ? 0.8 : 1.0);
      // K16/V16: no prep; K16/V8: v_prep; K8/V8: k_prep + v_prep.
      const FixtureCase cases[] = {
          {KvDtype::k16v16, 40 * s, 1.00, {1.0, -1, 0.6, 0.5, 1.0, -1, 0.6, 0.1}},
          {KvDtype::k16v8, 33 * s, 0.85, {1.0, -1, 0.6, 0.5, 0.5, 0.2, 0.6, 0.1}},
          {KvDtype::k8v8, 30 * s, 0.80, {0.5, 0.3, 0.6, 0.5, 0.5, 0.2, 0.6, 0.1}},
      };
      for (const FixtureCase& f : cases) {
        CaseRecord rec = makeFixtureRecord(base, f);
        // Only cold K8/V8 carries a perfect-stream fraction (as a backend measuring it for some cases would).
        if (f.kv == KvDtype::k8v8 && cache == CacheState::hbm_cold)
          rec.measurements.push_back({"stream_same_bytes_fraction", 0.5 + context / 65536.0, ""});
        store.add_case(run_id, rec);
        ++stored;
      }
    }
  }
  store.finish_run(run_id);
  return stored;
}

}  // namespace tilepath::test
