#include "core/numerics/npy_reader.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <utility>

#include "core/numerics/fp16.h"
#include "core/numerics/fp8.h"

namespace tilepath::numerics {

namespace {

static_assert(std::endian::native == std::endian::little, "the .npy reader copies little-endian data as it is");

struct ElementFormat {
  std::size_t item_bytes = 0;
  std::vector<std::string_view> descrs;  // the first is the one to suggest
};

ElementFormat element_format(NpyElementType type) {
  switch (type) {
    case NpyElementType::float32:
      return {4, {"<f4"}};
    case NpyElementType::float16:
      return {2, {"<f2"}};
    case NpyElementType::bfloat16:
      return {2, {"<u2", "<i2", "|V2", "<V2"}};
  }
  return {};
}

std::string accepted_descrs(const ElementFormat& format) {
  std::string text;
  for (std::size_t i = 0; i < format.descrs.size(); ++i) {
    if (i > 0) text += i + 1 == format.descrs.size() ? " or " : ", ";
    text += "'" + std::string(format.descrs[i]) + "'";
  }
  return text;
}

// The ranks a file may have (base_rank, or base_rank + 1 with a leading layer axis) and
// how messages name its axes.
struct Layout {
  int base_rank = 0;
  const char* expected_ranks = "";
  const char* index_names = "";  // with the layer axis
};

const Layout kKvLayout{3, "rank 3 [tokens, kv_heads, head_dim] or rank 4 [layers, tokens, kv_heads, head_dim]",
                       "[layer, token, head, d]"};
const Layout kBiasLayout{2, "rank 2 [kv_heads, head_dim] or rank 3 [layers, kv_heads, head_dim]", "[layer, head, d]"};

struct CheckedArray {
  std::vector<int> dims;  // base_rank + 1 entries: the layer axis first (1 when the file has none)
  int file_rank = 0;
  std::vector<float> data;
};

void check_descr(const NpyHeader& header, NpyElementType type, const std::string& path) {
  const ElementFormat format = element_format(type);
  if (std::find(format.descrs.begin(), format.descrs.end(), header.descr) != format.descrs.end()) return;
  const std::string accepted = "accepted for " + std::string(to_string(type)) + ": " + accepted_descrs(format);
  if (header.structured_descr) {
    throw npy_error(path, "wrong dtype: found the structured dtype " + header.descr + ", " + accepted);
  }
  if (!header.descr.empty() && header.descr.front() == '>') {
    throw npy_error(path, "wrong dtype: found big-endian '" + header.descr + "', " + accepted +
                              " (little-endian only: save with arr.astype('" + std::string(format.descrs.front()) +
                              "'))");
  }
  throw npy_error(path, "wrong dtype: found '" + header.descr + "', " + accepted);
}

// Rank, zero dimensions, int range and the byte count; returns the data bytes.
std::uint64_t check_shape(const NpyHeader& header, std::size_t item_bytes, const Layout& layout,
                          const std::string& path) {
  const std::string shape = npy_shape_text(header.shape);
  const int rank = static_cast<int>(header.shape.size());
  if (rank != layout.base_rank && rank != layout.base_rank + 1) {
    throw npy_error(path, "wrong rank: found shape " + shape + " of rank " + std::to_string(rank) + ", expected " +
                              layout.expected_ranks);
  }
  for (const std::uint64_t dimension : header.shape) {
    if (dimension == 0) throw npy_error(path, "zero dimension: shape " + shape + " holds no values");
  }
  for (const std::uint64_t dimension : header.shape) {
    if (dimension > static_cast<std::uint64_t>(INT_MAX)) {
      throw npy_error(path, "size overflow: dimension " + std::to_string(dimension) + " of shape " + shape +
                                " exceeds " + std::to_string(INT_MAX));
    }
  }
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t bytes = item_bytes;
  for (const std::uint64_t dimension : header.shape) {
    if (bytes > kMax / dimension) {
      throw npy_error(path, "size overflow: shape " + shape + " of " + std::to_string(item_bytes) +
                                "-byte elements needs more than 2^64 bytes");
    }
    bytes *= dimension;
  }
  if (bytes > kMax - header.data_offset) {
    throw npy_error(path, "size overflow: shape " + shape + " after the " + std::to_string(header.data_offset) +
                              "-byte header needs more than 2^64 bytes");
  }
  return bytes;
}

void check_file_size(std::uint64_t file_bytes, std::uint64_t data_bytes, const NpyHeader& header,
                     const std::string& path) {
  const std::string needs = "shape " + npy_shape_text(header.shape) + " of '" + header.descr + "' needs " +
                            std::to_string(data_bytes) + " data bytes after the " + std::to_string(header.data_offset) +
                            "-byte header";
  const std::uint64_t expected = header.data_offset + data_bytes;
  if (file_bytes < expected) {
    throw npy_error(path, "truncated data: " + needs + " (" + std::to_string(expected) + " in all), the file has " +
                              std::to_string(file_bytes) + " bytes");
  }
  if (file_bytes > expected) {
    throw npy_error(path, "trailing bytes: the file has " + std::to_string(file_bytes) + " bytes, " +
                              std::to_string(file_bytes - expected) + " beyond the " + std::to_string(expected) +
                              " that it needs (" + needs + ")");
  }
}

// Reads `count` elements at the data offset and converts them to float.
std::vector<float> read_elements(std::ifstream& file, const NpyHeader& header, NpyElementType type, std::size_t count,
                                 const std::string& path) {
  file.seekg(static_cast<std::streamoff>(header.data_offset));
  std::vector<float> data;
  try {
    data.resize(count);
  } catch (const std::bad_alloc&) {
    throw npy_error(path, "out of memory: " + std::to_string(count) + " values do not fit as float");
  }
  if (type == NpyElementType::float32) {
    file.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(count * sizeof(float)));
    if (!file) throw npy_error(path, "read failed in the data");
    return data;
  }
  // 2-byte elements: convert a chunk at a time so the raw bits never need a second full copy.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::vector<std::uint16_t> bits(std::min(count, kChunk));
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min(count - done, kChunk);
    file.read(reinterpret_cast<char*>(bits.data()), static_cast<std::streamsize>(n * sizeof(std::uint16_t)));
    if (!file) throw npy_error(path, "read failed in the data");
    for (std::size_t i = 0; i < n; ++i) {
      data[done + i] = type == NpyElementType::float16 ? fp16_to_float(bits[i]) : bf16_to_float(bits[i]);
    }
    done += n;
  }
  return data;
}

void check_finite(const CheckedArray& array, const Layout& layout, const std::string& path) {
  std::size_t nan_count = 0, inf_count = 0, first = 0;
  for (std::size_t i = 0; i < array.data.size(); ++i) {
    const float value = array.data[i];
    if (std::isfinite(value)) continue;
    if (nan_count + inf_count == 0) first = i;
    (std::isnan(value) ? nan_count : inf_count) += 1;
  }
  if (nan_count + inf_count == 0) return;
  // Unravel the first index over the dims (layer axis included), last axis fastest.
  std::vector<std::size_t> index(array.dims.size());
  std::size_t rest = first;
  for (std::size_t axis = array.dims.size(); axis-- > 0;) {
    index[axis] = rest % static_cast<std::size_t>(array.dims[axis]);
    rest /= static_cast<std::size_t>(array.dims[axis]);
  }
  std::string where = "[";
  for (std::size_t axis = 0; axis < index.size(); ++axis) {
    if (axis > 0) where += ", ";
    where += std::to_string(index[axis]);
  }
  where += "]";
  throw npy_error(path, "non-finite values: " + std::to_string(nan_count + inf_count) + " of " +
                            std::to_string(array.data.size()) + " (" + std::to_string(nan_count) + " NaN, " +
                            std::to_string(inf_count) + " Inf); the first at " + layout.index_names + " = " + where);
}

CheckedArray read_checked(const std::string& path, NpyElementType type, const Layout& layout) {
  const NpyHeader header = read_npy_header(path);
  check_descr(header, type, path);
  if (header.fortran_order) throw npy_error(path, "fortran_order: True; save with np.ascontiguousarray");
  const std::size_t item_bytes = element_format(type).item_bytes;
  const std::uint64_t data_bytes = check_shape(header, item_bytes, layout, path);

  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw npy_error(path, "cannot open for reading");
  const auto file_bytes = static_cast<std::uint64_t>(file.tellg());
  check_file_size(file_bytes, data_bytes, header, path);

  CheckedArray array;
  array.file_rank = static_cast<int>(header.shape.size());
  if (array.file_rank == layout.base_rank) array.dims.push_back(1);
  for (const std::uint64_t dimension : header.shape) array.dims.push_back(static_cast<int>(dimension));
  array.data = read_elements(file, header, type, static_cast<std::size_t>(data_bytes / item_bytes), path);
  check_finite(array, layout, path);
  return array;
}

std::span<const float> layer_span(const std::vector<float>& data, int layers, std::size_t layer_size, int index) {
  if (index < 0 || index >= layers) {
    throw std::out_of_range("layer " + std::to_string(index) + " of " + std::to_string(layers));
  }
  return std::span<const float>(data).subspan(static_cast<std::size_t>(index) * layer_size, layer_size);
}

void check_index(int value, int size, const char* axis) {
  if (value < 0 || value >= size) {
    throw std::out_of_range(std::string(axis) + " " + std::to_string(value) + " of " + std::to_string(size));
  }
}

}  // namespace

std::string_view to_string(NpyElementType type) {
  switch (type) {
    case NpyElementType::float32:
      return "float32";
    case NpyElementType::float16:
      return "float16";
    case NpyElementType::bfloat16:
      return "bfloat16";
  }
  return "?";
}

std::size_t NpyKvTensor::layer_size() const {
  return static_cast<std::size_t>(tokens) * static_cast<std::size_t>(kv_heads) * static_cast<std::size_t>(head_dim);
}

std::span<const float> NpyKvTensor::layer(int index) const { return layer_span(data, layers, layer_size(), index); }

float NpyKvTensor::at(int layer, int token, int head, int d) const {
  check_index(layer, layers, "layer");
  check_index(token, tokens, "token");
  check_index(head, kv_heads, "head");
  check_index(d, head_dim, "d");
  const std::size_t row =
      (static_cast<std::size_t>(layer) * static_cast<std::size_t>(tokens) + static_cast<std::size_t>(token)) *
          static_cast<std::size_t>(kv_heads) +
      static_cast<std::size_t>(head);
  return data[row * static_cast<std::size_t>(head_dim) + static_cast<std::size_t>(d)];
}

std::size_t NpyKvBias::layer_size() const {
  return static_cast<std::size_t>(kv_heads) * static_cast<std::size_t>(head_dim);
}

std::span<const float> NpyKvBias::layer(int index) const { return layer_span(data, layers, layer_size(), index); }

float NpyKvBias::at(int layer, int head, int d) const {
  check_index(layer, layers, "layer");
  check_index(head, kv_heads, "head");
  check_index(d, head_dim, "d");
  const std::size_t row =
      static_cast<std::size_t>(layer) * static_cast<std::size_t>(kv_heads) + static_cast<std::size_t>(head);
  return data[row * static_cast<std::size_t>(head_dim) + static_cast<std::size_t>(d)];
}

NpyKvTensor read_npy_kv(const std::string& path, NpyElementType type) {
  CheckedArray array = read_checked(path, type, kKvLayout);
  NpyKvTensor tensor;
  tensor.layers = array.dims[0];
  tensor.tokens = array.dims[1];
  tensor.kv_heads = array.dims[2];
  tensor.head_dim = array.dims[3];
  tensor.file_rank = array.file_rank;
  tensor.data = std::move(array.data);
  return tensor;
}

NpyKvBias read_npy_kv_bias(const std::string& path, NpyElementType type) {
  CheckedArray array = read_checked(path, type, kBiasLayout);
  NpyKvBias bias;
  bias.layers = array.dims[0];
  bias.kv_heads = array.dims[1];
  bias.head_dim = array.dims[2];
  bias.file_rank = array.file_rank;
  bias.data = std::move(array.data);
  return bias;
}

}  // namespace tilepath::numerics
