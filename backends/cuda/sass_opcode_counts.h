#pragma once
// SASS opcode counts per kernel of this plugin, from `cuobjdump --dump-sass` of its own
// file: what the kernel metadata of every case records (F2FP, PRMT, I2F; HMMA, HGMMA,
// QGMMA; LDS, LDSM, STS; LDL/STL spills ...). cuobjdump is looked for on PATH and in
// /usr/local/cuda/bin; without it a case records why there are no counts.

#include <map>
#include <string>
#include <string_view>

namespace tilepath::cuda {

struct SassCounts {
  std::map<std::string, int> opcodes;  // base opcode (the text before the first '.') -> instructions
  int instructions = 0;
  int count(const std::string& opcode) const;  // 0 when the kernel has none
};

// Kernel (mangled name from "Function : ...") -> its counts, over cuobjdump's SASS text.
std::map<std::string, SassCounts> parse_cuobjdump_sass(std::string_view text);

struct SassLookup {
  SassCounts counts;
  std::string source;  // the command that produced them
  std::string error;   // "" on success; else why there are no counts
};

// The SASS of one kernel of this plugin: `cuobjdump --dump-sass --function NAME` of its
// own file, run once per kernel and kept (thread-safe).
const SassLookup& sass_of(const std::string& mangled_name);

// The opcodes stored as case measurements (sass_<OPCODE>).
inline constexpr const char* kReportedSassOpcodes[] = {"F2FP", "PRMT", "I2F", "HMMA", "HGMMA", "QGMMA",
                                                       "LDS",  "LDSM", "STS", "LDL",  "STL",   "LDGSTS"};

}  // namespace tilepath::cuda
