#pragma once
// Reader for imported K/V dumps stored as NumPy .npy files (format versions 1.0, 2.0 and
// 3.0, C order, little-endian), converted to float exactly.
//
// Element types. The caller states what the dump holds and the file's descr must agree:
//   float32   '<f4'
//   float16   '<f2'   (IEEE binary16, fp16.h)
//   bfloat16  '<u2', '<i2', '|V2' or '<V2': NumPy has no bfloat16, so such dumps are
//             saved as raw 16-bit patterns (torch's .view(torch.int16), ml_dtypes' void).
// Big-endian descrs ('>f4', ...) are refused: dumps come from little-endian GPUs and
// hosts, and a byte-swapped file is more likely a mistake than a deliberate choice.
//
// Every failure throws NpyError (npy_header.h) with a one-line message "<file>: <problem>".

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/numerics/npy_header.h"

namespace tilepath::numerics {

enum class NpyElementType { float32, float16, bfloat16 };
std::string_view to_string(NpyElementType type);  // "float32" | "float16" | "bfloat16"

// A K or V dump: data[((layer * tokens + token) * kv_heads + head) * head_dim + d].
// A rank-3 file [tokens, kv_heads, head_dim] reads as one layer.
struct NpyKvTensor {
  int layers = 0;
  int tokens = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int file_rank = 0;  // 3 or 4
  std::vector<float> data;

  std::size_t layer_size() const;  // tokens * kv_heads * head_dim
  // [tokens][kv_heads][head_dim] of one layer; std::out_of_range outside [0, layers).
  std::span<const float> layer(int index) const;
  float at(int layer, int token, int head, int d) const;
};

// A key bias: data[(layer * kv_heads + head) * head_dim + d]. A rank-2 file
// [kv_heads, head_dim] reads as one layer.
struct NpyKvBias {
  int layers = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int file_rank = 0;  // 2 or 3
  std::vector<float> data;

  std::size_t layer_size() const;  // kv_heads * head_dim
  std::span<const float> layer(int index) const;
  float at(int layer, int head, int d) const;
};

// Reads a rank-3 [tokens, kv_heads, head_dim] or rank-4 [layers, tokens, kv_heads,
// head_dim] dump. Refuses (NpyError): a file that is not .npy, an unsupported version, a
// malformed header, a descr that does not match `type`, fortran_order True, another
// rank, a zero dimension, a size that overflows (or a dimension above INT_MAX), data
// shorter or longer than the shape says, and NaN or Inf values (naming the first index
// and how many).
NpyKvTensor read_npy_kv(const std::string& path, NpyElementType type);

// The same checks for a bias of rank 2 [kv_heads, head_dim] or rank 3 [layers, kv_heads, head_dim].
NpyKvBias read_npy_kv_bias(const std::string& path, NpyElementType type);

}  // namespace tilepath::numerics
