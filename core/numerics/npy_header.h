#pragma once
// The header of a NumPy .npy file (format versions 1.0, 2.0 and 3.0): magic "\x93NUMPY",
// version bytes, header length (u16 in 1.0, u32 in 2.0/3.0, little-endian) and a Python
// dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces
// and a newline. Parsed by a small tokenizer, never evaluated.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tilepath::numerics {

// Messages are one line, "<file>: <problem>": control bytes in the path or in quoted
// header text are written as \xNN.
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the header says, checked only for being a well-formed .npy header.
struct NpyHeader {
  int major_version = 0;  // 1, 2 or 3
  int minor_version = 0;  // 0
  std::string descr;      // the dtype string; for a structured dtype, the list as written
  bool structured_descr = false;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
  std::uint64_t data_offset = 0;  // bytes before the array data
};

// Reads and parses the header of path. The dict must hold exactly the keys 'descr' (a
// string, or a list for a structured dtype), 'fortran_order' (True/False) and 'shape' (a
// tuple of non-negative integers; Python 2's 3L suffix is accepted), with Python's
// literal syntax for strings (no escapes), tuples, lists and trailing commas. Throws
// NpyError: unreadable file, bad magic, unsupported version, malformed header.
NpyHeader read_npy_header(const std::string& path);

// The pieces of a one-line message, shared with npy_reader.cpp.
std::string npy_printable(std::string_view text);                         // control bytes as \xNN
std::string npy_shape_text(const std::vector<std::uint64_t>& shape);      // Python's form: (), (5,), (2, 3)
NpyError npy_error(const std::string& path, const std::string& problem);  // "<path>: <problem>"

}  // namespace tilepath::numerics
