// The lines a sweep and its `tilepath worker` processes exchange: a request carries the
// whole case (operating point and run settings) and reads back as the same case, and a bad
// line is an error naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/run/worker_protocol.h"

namespace tilepath {
namespace {

TEST(WorkerProtocol, ARequestCarriesTheWholeCaseAndReadsBackAsIt) {
  WorkerRequest sent;
  sent.case_index = 41;
  sent.run_id = 7;
  sent.op.batch = 3;
  sent.op.context_lengths = {100, 2000, 5};
  sent.op.kv = KvDtype::k16v8;
  sent.op.k_path = KPath::k16;
  sent.op.mode = default_mode(KvDtype::k16v8, KPath::k16);
  sent.op.cache = CacheState::l2_warm;
  sent.op.splits = 4;
  sent.settings.device = 1;
  sent.settings.warmup = 0;
  sent.settings.repeats = 3;
  sent.settings.stage_costs = false;
  sent.settings.tile_interval = false;
  sent.settings.seed = std::numeric_limits<std::uint64_t>::max() - 5;  // beyond int64
  sent.settings.key_distribution = "qwen_bias";
  sent.settings.gate_thresholds.max_abs = 0.25;
  sent.settings.gate_thresholds.kl = NAN;  // not gated
  sent.settings.gpu_model = "mi300x";
  sent.settings.save_tensors_dir = "/tmp/tensors";
  sent.key = case_key(sent.op, sent.settings);

  const std::string line = encode(sent);
  ASSERT_EQ(line.back(), '\n');
  ASSERT_EQ(line.find('\n'), line.size() - 1);  // one line
  const WorkerRequest got = decode_request(line.substr(0, line.size() - 1));
  EXPECT_EQ(got.case_index, 41);
  EXPECT_EQ(got.run_id, 7);
  EXPECT_EQ(got.key, sent.key);
  EXPECT_EQ(got.op, sent.op);
  EXPECT_EQ(case_key(got.op, got.settings), sent.key);
  EXPECT_EQ(got.settings.device, 1);
  EXPECT_EQ(got.settings.warmup, 0);
  EXPECT_EQ(got.settings.repeats, 3);
  EXPECT_FALSE(got.settings.stage_costs);
  EXPECT_FALSE(got.settings.tile_interval);
  EXPECT_EQ(got.settings.seed, sent.settings.seed);
  EXPECT_EQ(got.settings.key_distribution, "qwen_bias");
  EXPECT_EQ(got.settings.gate_thresholds.max_abs, 0.25);
  EXPECT_TRUE(std::isnan(got.settings.gate_thresholds.kl));
  EXPECT_EQ(got.settings.gate_thresholds.rel_l2, sent.settings.gate_thresholds.rel_l2);
  EXPECT_EQ(got.settings.gpu_model, "mi300x");
  EXPECT_EQ(got.settings.save_tensors_dir, "/tmp/tensors");
}

TEST(WorkerProtocol, ABadRequestNamesWhatIsWrong) {
  const auto error_of = [](const std::string& line) {
    try {
      decode_request(line);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(R"({"case": 1, "key": "k", "run": 2})").find("\"op\""), std::string::npos);
  EXPECT_NE(error_of(R"({"case": 1, "key": "k", "run": 2, "op": {}, "settings": {"repeat": 3}})").find("repeat"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"case": 1, "key": "k", "run": 2, "op": {}, "settings": {"repeats": "3"}})").find("repeats"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"case": 1, "key": "k", "run": 2, "op": {"batsh": 3}, "settings": {}})").find("batsh"),
            std::string::npos);
  EXPECT_NE(error_of("not json").find("not a JSON object"), std::string::npos);
}

TEST(WorkerProtocol, ADoneReplyKeepsItsMessageThroughInvalidUtf8) {
  WorkerReply done;
  done.kind = WorkerReply::Kind::done;
  done.case_index = 3;
  done.status = "failed";
  done.message = std::string("plugin said \xff\xfe here");
  done.stored = true;
  done.case_id = 99;
  done.latency_us = 12.5;
  const std::string line = encode(done);
  const WorkerReply got = decode_reply(line.substr(0, line.size() - 1));
  EXPECT_EQ(got.kind, WorkerReply::Kind::done);
  EXPECT_EQ(got.case_index, 3);
  EXPECT_EQ(got.status, "failed");
  EXPECT_TRUE(got.stored);
  EXPECT_EQ(got.case_id, 99);
  EXPECT_EQ(got.latency_us, 12.5);
  EXPECT_EQ(got.message.rfind("plugin said ", 0), 0u);
  EXPECT_NE(got.message.find(" here"), std::string::npos);
}

}  // namespace
}  // namespace tilepath
