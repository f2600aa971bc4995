// SASS opcode counts per kernel (backends/cuda/sass_opcode_counts.h) from cuobjdump's text.
// The input below is written in the layout `cuobjdump --dump-sass` prints (a function
// header, one instruction per address, the encoding's second line); it was not captured
// from a run, and the opcodes are a sample, not a real kernel.
#include <gtest/gtest.h>

#include "backends/cuda/sass_opcode_counts.h"

using namespace tilepath::cuda;

namespace {

// clang-format off
constexpr const char* kSass = R"SASS(
Fatbin elf code:
================
arch = sm_90a
code version = [1,8]
host = linux
compile_size = 64bit

	code for sm_90a
		Function : _ZN8tilepath4cuda7kernels23decode_attention_kernelINS1_12DecodeTraitsILi2ELi2ELb0ELi128ELi0ELin1ELi2EEEEEvNS1_12KernelParamsE
	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                      /* 0x00000a00ff017b82 */
                                                                                 /* 0x000fe20000000800 */
        /*0010*/                   LDSM.16.MT88.4 R4, [R2] ;                  /* 0x000000000204783b */
                                                                                 /* 0x000e240000004200 */
        /*0020*/                   HMMA.16816.F32 R8, R4, R6, R8 ;            /* 0x000000060408723c */
        /*0030*/                   HMMA.16816.F32 R12, R4, R7, R12 ;
        /*0040*/              @!P0 F2FP.F16.E4M3.UNPACK_B R3, R3 ;
        /*0050*/                   PRMT R5, R3, 0x7531, R4 ;
        /*0060*/                   STL [R1], R2 ;
        /*0070*/                   EXIT ;
		..........

		Function : combine_kernel
        /*0000*/                   LDG.E R2, desc[UR4][R2.64] ;
        /*0010*/                   EXIT ;
)SASS";
// clang-format on

}  // namespace

TEST(SassOpcodeCounts, CountsBaseOpcodesPerFunctionPastPredicatesAndEncodingLines) {
  const auto functions = parse_cuobjdump_sass(kSass);
  ASSERT_EQ(functions.size(), 2u);
  const SassCounts& main = functions.begin()->second;  // "_ZN..." sorts before "combine_kernel"
  EXPECT_EQ(main.instructions, 8);
  EXPECT_EQ(main.count("HMMA"), 2);
  EXPECT_EQ(main.count("LDSM"), 1);
  EXPECT_EQ(main.count("F2FP"), 1);  // behind the predicate @!P0
  EXPECT_EQ(main.count("PRMT"), 1);
  EXPECT_EQ(main.count("STL"), 1);
  EXPECT_EQ(main.count("QGMMA"), 0);
  const SassCounts& combine = functions.at("combine_kernel");
  EXPECT_EQ(combine.instructions, 2);
  EXPECT_EQ(combine.count("LDG"), 1);
}

TEST(SassOpcodeCounts, TextWithoutFunctionsGivesNone) {
  EXPECT_TRUE(parse_cuobjdump_sass("cuobjdump info    : File 'x' does not contain device code\n").empty());
}
