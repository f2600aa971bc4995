#include "core/numerics/npy_writer.h"

#include <fstream>
#include <stdexcept>

namespace tilepath::numerics {

std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  // magic(6) + version(2) + header length(2) + dict + padding + '\n' is a multiple of 64.
  constexpr std::size_t kPrefix = 10;
  std::size_t total = kPrefix + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  dict.append(total - kPrefix - dict.size() - 1, ' ');
  dict += '\n';
  if (dict.size() > 0xFFFF) throw std::runtime_error("npy header too long for format 1.0");
  std::string header = "\x93NUMPY";
  header += static_cast<char>(1);
  header += static_cast<char>(0);
  header += static_cast<char>(dict.size() & 0xFF);
  header += static_cast<char>((dict.size() >> 8) & 0xFF);
  return header + dict;
}

void write_npy(const std::string& path, const std::string& descr, std::size_t item_bytes,
               const std::vector<std::size_t>& shape, const void* data, std::size_t byte_count) {
  std::size_t elements = 1;
  for (auto n : shape) elements *= n;
  if (elements * item_bytes != byte_count) {
    throw std::runtime_error(path + ": shape holds " + std::to_string(elements * item_bytes) + " bytes but " +
                             std::to_string(byte_count) + " were given");
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error(path + ": cannot open for writing");
  const std::string header = npy_header(descr, shape);
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(static_cast<const char*>(data), static_cast<std::streamsize>(byte_count));
  if (!file) throw std::runtime_error(path + ": write failed");
}

}  // namespace tilepath::numerics
