// The plugin-side helper (backends/abi/tilepath_plugin.h) the cpu, sim and cuda
// plugins share: result storage handed to the host and taken back, text into ABI
// buffers, fields of an older host struct.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "backends/abi/tilepath_plugin.h"

namespace tilepath::plugin {
namespace {

TEST(PluginHelper, AttachPointsTheResultAtItsStorageAndReleaseTakesItBack) {
  tp_result r{};
  r.struct_size = sizeof r;
  auto storage = std::make_unique<ResultStorage>();
  storage->add_stage_cost(TP_STAGE_QK, TP_COST_REMOVED, 0.25);
  storage->add_stage_cost(TP_STAGE_K_LOAD, TP_COST_ISOLATED, 0.5);
  storage->add_metric("waves", 2, "waves");
  storage->add_artifact("samples.json", "application/json", "[1,2,3]");
  storage->add_artifact("empty.bin", "application/octet-stream", "");
  ResultStorage::attach(r, std::move(storage));

  ASSERT_EQ(r.stage_cost_count, 2);
  EXPECT_EQ(r.stage_costs[0].stage, TP_STAGE_QK);
  EXPECT_EQ(r.stage_costs[0].method, TP_COST_REMOVED);
  EXPECT_EQ(r.stage_costs[0].cost_us, 0.25);
  EXPECT_EQ(r.stage_costs[1].cost_us, 0.5);
  ASSERT_EQ(r.metric_count, 1);
  EXPECT_STREQ(r.metrics[0].name, "waves");
  EXPECT_STREQ(r.metrics[0].unit, "waves");
  EXPECT_EQ(r.metrics[0].value, 2);
  ASSERT_EQ(r.artifact_count, 2);
  EXPECT_STREQ(r.artifacts[0].name, "samples.json");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.artifacts[0].data), r.artifacts[0].size), "[1,2,3]");
  EXPECT_EQ(r.artifacts[1].size, 0u);
  EXPECT_NE(r.plugin_owned, nullptr);

  ResultStorage::release(r);
  EXPECT_EQ(r.plugin_owned, nullptr);
  EXPECT_EQ(r.stage_costs, nullptr);
  EXPECT_EQ(r.stage_cost_count, 0);
  EXPECT_EQ(r.metrics, nullptr);
  EXPECT_EQ(r.artifact_count, 0);
  ResultStorage::release(r);  // idempotent
}

TEST(PluginHelper, CopyTextCutsToTheBufferAndTerminates) {
  char small[8];
  std::memset(small, 'x', sizeof small);
  copy_text(small, "a longer message");
  EXPECT_STREQ(small, "a longe");
  copy_text(small, "ok");
  EXPECT_STREQ(small, "ok");
  copy_text(nullptr, 0, "ignored");  // no buffer: nothing written, no crash

  tp_result r{};
  EXPECT_EQ(finish(&r, TP_ERR_UNSUPPORTED, "head_dim: 96 is not compiled"), TP_ERR_UNSUPPORTED);
  EXPECT_EQ(r.status, TP_ERR_UNSUPPORTED);
  EXPECT_STREQ(r.message, "head_dim: 96 is not compiled");
}

TEST(PluginHelper, FieldsBeyondAnOlderHostStructAreAbsent) {
  tp_case c{};
  c.struct_size = sizeof c;
  EXPECT_TRUE(TP_HAS_FIELD(&c, tp_case, gpu_model));
  c.struct_size = offsetof(tp_case, gpu_model);  // a host whose tp_case ends before gpu_model
  EXPECT_FALSE(TP_HAS_FIELD(&c, tp_case, gpu_model));
  EXPECT_TRUE(TP_HAS_FIELD(&c, tp_case, splits));
  const tp_case* none = nullptr;
  EXPECT_FALSE(TP_HAS_FIELD(none, tp_case, splits));
}

}  // namespace
}  // namespace tilepath::plugin
