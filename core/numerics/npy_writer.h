#pragma once
// Minimal NumPy .npy (format v1.0) writer for little-endian contiguous arrays.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tilepath::numerics {

// descr is the NumPy dtype string: "<u2", "|u1", "<i4", "<f4", "<f8".
// Throws std::runtime_error naming the file when it cannot be written or when
// the shape does not match the byte count.
void write_npy(const std::string& path, const std::string& descr, std::size_t item_bytes,
               const std::vector<std::size_t>& shape, const void* data, std::size_t byte_count);

// The v1.0 header (magic, version, length, dict padded so the data starts 64-byte aligned).
std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape);

}  // namespace tilepath::numerics
