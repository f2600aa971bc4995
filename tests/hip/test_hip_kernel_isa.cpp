// The HIP plugin's kernels verified without hardware, from the gfx942 code objects it
// embeds: per kernel, the MFMA instructions its path must use (the FP8 MFMA for fp8_qk's
// QK and k_only's PV, the BF16 MFMA elsewhere) in the number the tile shape implies, no
// scratch (private segment) and no spills, and registers and LDS that allow the occupancy
// the kernel is built for.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "backends/abi/tilepath_backend.h"
#include "backends/hip/code_object.h"
#include "backends/hip/decode_launch.h"
#include "backends/hip/kernel_symbols.h"

using namespace tilepath::hip;

namespace {

constexpr char kObjdump[] = "llvm-objdump-19";
constexpr char kFp8Mfma[] = "v_mfma_f32_16x16x32_fp8_fp8";
constexpr char kBf16Mfma[] = "v_mfma_f32_16x16x16_bf16";

std::string plugin_path() { return std::string(TILEPATH_PLUGIN_DIR) + "/libtilepath_backend_hip.so"; }

bool have_objdump() { return std::system((std::string("command -v ") + kObjdump + " >/dev/null 2>&1").c_str()) == 0; }

struct InstructionCounts {
  int fp8_mfma = 0, bf16_mfma = 0, scratch = 0;
};

// Disassembles one code object; instruction counts per kernel symbol.
std::map<std::string, InstructionCounts> disassemble(const CodeObject& object) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::filesystem::path file = dir / ("tilepath-hip-" + object.sha256.substr(0, 16) + ".co");
  {
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(object.elf.data()), std::streamsize(object.elf.size()));
  }
  const std::string command = std::string(kObjdump) + " -d --mcpu=gfx942 " + file.string() + " 2>&1";
  std::map<std::string, InstructionCounts> counts;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return counts;
  std::string current;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    const std::string text(line);
    // a function starts with "<address> <symbol>:"
    const auto open = text.find(" <"), close = text.find(">:");
    if (text[0] != '\t' && text[0] != ' ' && open != std::string::npos && close != std::string::npos) {
      current = text.substr(open + 2, close - open - 2);
      counts[current];
      continue;
    }
    if (current.empty()) continue;
    InstructionCounts& c = counts[current];
    if (text.find(kFp8Mfma) != std::string::npos) ++c.fp8_mfma;
    if (text.find(kBf16Mfma) != std::string::npos) ++c.bf16_mfma;
    if (text.find("scratch_") != std::string::npos) ++c.scratch;
  }
  pclose(pipe);
  std::filesystem::remove(file);
  return counts;
}

const CodeObjectScan& plugin_scan() {
  static const CodeObjectScan scan = scan_hip_code_objects(plugin_path());
  return scan;
}

// MFMAs per tile of the kernel without ablations (decode_stages.h): QK is 2 tiles of 16
// tokens x D/32 steps (FP8: one 16x16x32 each; BF16: two 16x16x16), PV is D/16 m-tiles
// (FP8: one 16x16x32 over both tiles; BF16: one 16x16x16 per tile).
struct MfmaCounts {
  int qk_fp8 = 0, qk_bf16 = 0, pv_fp8 = 0, pv_bf16 = 0;
};
MfmaCounts expected_per_tile(const VariantInfo& v) {
  MfmaCounts m;
  (v.fp8_qk_mfma ? m.qk_fp8 : m.qk_bf16) = v.fp8_qk_mfma ? v.head_dim / 16 : v.head_dim / 8;
  (v.fp8_pv_mfma ? m.pv_fp8 : m.pv_bf16) = v.fp8_pv_mfma ? v.head_dim / 16 : v.head_dim / 8;
  return m;
}

// The counts an ablation leaves: qk or pv removed (0x) or doubled (2x), load_only none.
void expected_counts(const VariantInfo& v, int* fp8, int* bf16) {
  MfmaCounts m = expected_per_tile(v);
  const auto scale = [&](int stage) {
    if (v.ablation == AblationKind::load_only) return 0;
    if (v.ablated_stage != stage) return 1;
    return v.ablation == AblationKind::remove ? 0 : v.ablation == AblationKind::twice ? 2 : 1;
  };
  const int qk = scale(TP_STAGE_QK), pv = scale(TP_STAGE_PV);
  *fp8 = m.qk_fp8 * qk + m.pv_fp8 * pv;
  *bf16 = m.qk_bf16 * qk + m.pv_bf16 * pv;
}

}  // namespace

TEST(HipCodeObjects, PluginEmbedsGfx942CodeObjectsWithHashes) {
  const CodeObjectScan& scan = plugin_scan();
  ASSERT_TRUE(scan.error.empty()) << scan.error;
  ASSERT_FALSE(scan.objects.empty());
  for (const CodeObject& o : scan.objects) {
    EXPECT_NE(o.target.find("gfx942"), std::string::npos) << o.target;
    EXPECT_EQ(o.sha256.size(), 64u);
    EXPECT_FALSE(o.kernels.empty()) << o.target << " lists no kernels in its metadata note";
  }
}

TEST(HipCodeObjects, EveryVariantAndCombineHasARecord) {
  const CodeObjectScan& scan = plugin_scan();
  ASSERT_TRUE(scan.error.empty()) << scan.error;
  ASSERT_FALSE(decode_variants().empty());
  for (const VariantInfo& v : decode_variants())
    EXPECT_NE(find_kernel(scan, v.symbol_prefix), nullptr) << v.name << " (" << v.symbol_prefix << ")";
  for (int d : {64, 128, 256}) EXPECT_NE(find_kernel(scan, combine_symbol_prefix(d)), nullptr) << "combine d" << d;
}

TEST(HipCodeObjects, KernelsUseNoScratchAndReachTheirTargetOccupancy) {
  const CodeObjectScan& scan = plugin_scan();
  ASSERT_TRUE(scan.error.empty()) << scan.error;
  for (const VariantInfo& v : decode_variants()) {
    const CodeObjectKernel* k = find_kernel(scan, v.symbol_prefix);
    ASSERT_NE(k, nullptr) << v.name;
    EXPECT_EQ(k->scratch_bytes, 0) << v.name << ": private segment in use";
    EXPECT_EQ(k->vgpr_spills, 0) << v.name;
    EXPECT_EQ(k->sgpr_spills, 0) << v.name;
    EXPECT_EQ(k->lds_bytes, v.lds_bytes) << v.name << ": LDS differs from the traits' budget";
    EXPECT_EQ(k->wavefront_size, 64) << v.name;
    EXPECT_LE(k->vgprs, 512 / v.target_waves_per_simd) << v.name << ": unified VGPRs (AGPRs included)";
    EXPECT_LE(arch_vgprs(*k), 256) << v.name;
    EXPECT_GE(waves_per_simd(*k, v.threads), v.target_waves_per_simd)
        << v.name << ": " << k->vgprs << " unified VGPRs (" << k->agprs << " AGPRs), " << k->lds_bytes << " B LDS";
  }
}

TEST(HipCodeObjects, EachKernelRunsTheMfmaOfItsPath) {
  if (!have_objdump()) GTEST_SKIP() << kObjdump << " not found (apt-get install llvm-19): the ISA is not checked";
  const CodeObjectScan& scan = plugin_scan();
  ASSERT_TRUE(scan.error.empty()) << scan.error;
  std::map<std::string, InstructionCounts> isa;
  for (const CodeObject& o : scan.objects) {
    const auto counts = disassemble(o);
    isa.insert(counts.begin(), counts.end());
  }
  ASSERT_FALSE(isa.empty()) << kObjdump << " printed no functions";
  int fp8_kernels = 0;
  for (const VariantInfo& v : decode_variants()) {
    const CodeObjectKernel* k = find_kernel(scan, v.symbol_prefix);
    ASSERT_NE(k, nullptr) << v.name;
    ASSERT_TRUE(isa.count(k->symbol)) << v.name << ": not in the disassembly";
    const InstructionCounts& c = isa.at(k->symbol);
    int fp8 = 0, bf16 = 0;
    expected_counts(v, &fp8, &bf16);
    EXPECT_EQ(c.fp8_mfma, fp8) << v.name << ": " << kFp8Mfma;
    EXPECT_EQ(c.bf16_mfma, bf16) << v.name << ": " << kBf16Mfma;
    EXPECT_EQ(c.scratch, 0) << v.name << ": scratch instructions";
    if (c.fp8_mfma > 0) ++fp8_kernels;
  }
  EXPECT_GT(fp8_kernels, 0);
}
