#include "core/numerics/npy_header.h"

#include <array>
#include <fstream>
#include <limits>
#include <optional>
#include <utility>

namespace tilepath::numerics {

namespace {

constexpr std::string_view kMagic{"\x93NUMPY", 6};
// NumPy itself refuses headers above 10000 bytes unless told otherwise; this bound only
// keeps a corrupt length field from allocating gigabytes.
constexpr std::uint64_t kMaxHeaderBytes = 1u << 20;
constexpr int kMaxNesting = 32;

// One Python literal from the header dict.
struct Literal {
  enum class Kind { string, integer, boolean, tuple, list };
  Kind kind = Kind::string;
  std::string text;  // a string's contents or an integer's digits
  bool boolean = false;
  std::vector<Literal> items;  // tuple or list elements
  std::string_view source;     // the literal as written
};

// Recursive descent over the subset of Python literal syntax that .npy headers use.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  std::vector<std::pair<std::string, Literal>> parse_dict() {
    std::vector<std::pair<std::string, Literal>> entries;
    skip_space();
    expect('{', "at the start of the header");
    skip_space();
    while (!consume('}')) {
      Literal key = parse_value(0);
      if (key.kind != Literal::Kind::string) fail("a dict key is not a string: " + std::string(key.source));
      skip_space();
      expect(':', ("after the key '" + key.text + "'").c_str());
      Literal value = parse_value(0);
      entries.emplace_back(std::move(key.text), std::move(value));
      skip_space();
      if (consume(',')) {
        skip_space();
        continue;
      }
      expect('}', "after a dict value");
      break;
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected " + found() + " after the closing '}'");
    return entries;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw npy_error(path_, "malformed header: " + what + " (at byte " + std::to_string(pos_) + " of the header dict)");
  }

  std::string found() const {
    if (pos_ >= text_.size()) return "end of the header";
    return "'" + std::string(text_.substr(pos_, 1)) + "'";
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c, const char* context) {
    if (!consume(c)) fail(std::string("expected '") + c + "' " + context + ", found " + found());
  }

  Literal parse_value(int depth) {
    if (depth > kMaxNesting) fail("literals nested deeper than " + std::to_string(kMaxNesting));
    skip_space();
    if (pos_ >= text_.size()) fail("expected a value, found the end of the header");
    const std::size_t start = pos_;
    const char c = text_[pos_];
    Literal literal;
    if (c == '\'' || c == '"') {
      literal = parse_string();
    } else if (c >= '0' && c <= '9') {
      literal = parse_integer();
    } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_') {
      literal = parse_name();
    } else if (c == '(' || c == '[') {
      literal = parse_sequence(depth);
    } else {
      fail("expected a value, found " + found());
    }
    if (literal.source.empty()) literal.source = text_.substr(start, pos_ - start);
    return literal;
  }

  Literal parse_string() {
    const char quote = text_[pos_++];
    Literal literal;
    literal.kind = Literal::Kind::string;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("escape sequences in strings are not supported");
      if (text_[pos_] == '\n') fail("a string runs past the end of the line");
      literal.text += text_[pos_++];
    }
    if (pos_ >= text_.size()) fail("a string has no closing quote");
    ++pos_;
    return literal;
  }

  Literal parse_integer() {
    Literal literal;
    literal.kind = Literal::Kind::integer;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') literal.text += text_[pos_++];
    if (!consume('L')) consume('l');  // Python 2 long literals, as old NumPy wrote shapes
    return literal;
  }

  Literal parse_name() {
    const std::size_t start = pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) break;
      ++pos_;
    }
    const std::string_view name = text_.substr(start, pos_ - start);
    Literal literal;
    literal.kind = Literal::Kind::boolean;
    if (name == "True") {
      literal.boolean = true;
    } else if (name != "False") {
      pos_ = start;
      fail("unexpected name '" + std::string(name) + "' (only True and False are accepted)");
    }
    return literal;
  }

  // Python's rules: [] and [x] are lists; () is the empty tuple, (x) is just x, (x,) is a tuple.
  Literal parse_sequence(int depth) {
    const std::size_t start = pos_;
    const char open = text_[pos_++];
    const char close = open == '(' ? ')' : ']';
    Literal sequence;
    sequence.kind = open == '(' ? Literal::Kind::tuple : Literal::Kind::list;
    bool saw_comma = false;
    skip_space();
    while (!consume(close)) {
      sequence.items.push_back(parse_value(depth + 1));
      skip_space();
      if (consume(',')) {
        saw_comma = true;
        skip_space();
        continue;
      }
      expect(close, open == '(' ? "to close a tuple" : "to close a list");
      break;
    }
    if (open == '(' && sequence.items.size() == 1 && !saw_comma) return std::move(sequence.items.front());
    sequence.source = text_.substr(start, pos_ - start);
    return sequence;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

std::uint64_t little_endian(const unsigned char* bytes, int count) {
  std::uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// A shape entry as an unsigned 64-bit number; nullopt when it does not fit.
std::optional<std::uint64_t> parse_dimension(const std::string& digits) {
  std::uint64_t value = 0;
  for (const char c : digits) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

void interpret_dict(const std::vector<std::pair<std::string, Literal>>& entries, const std::string& path,
                    NpyHeader& header) {
  constexpr std::array<std::string_view, 3> kKeys = {"descr", "fortran_order", "shape"};
  std::array<const Literal*, 3> values = {nullptr, nullptr, nullptr};
  for (const auto& [key, value] : entries) {
    std::size_t index = 0;
    while (index < kKeys.size() && kKeys[index] != key) ++index;
    if (index == kKeys.size()) {
      throw npy_error(path, "malformed header: unexpected key '" + key +
                                "' (a header holds exactly 'descr', 'fortran_order' and 'shape')");
    }
    if (values[index] != nullptr) throw npy_error(path, "malformed header: the key '" + key + "' appears twice");
    values[index] = &value;
  }
  for (std::size_t i = 0; i < kKeys.size(); ++i) {
    if (values[i] == nullptr) throw npy_error(path, "malformed header: no '" + std::string(kKeys[i]) + "' key");
  }

  const Literal& descr = *values[0];
  if (descr.kind == Literal::Kind::string) {
    header.descr = descr.text;
  } else if (descr.kind == Literal::Kind::list) {
    header.descr = std::string(descr.source);
    header.structured_descr = true;
  } else {
    throw npy_error(path, "malformed header: 'descr' is " + std::string(descr.source) + ", not a dtype string");
  }

  const Literal& fortran_order = *values[1];
  if (fortran_order.kind != Literal::Kind::boolean) {
    throw npy_error(
        path, "malformed header: 'fortran_order' is " + std::string(fortran_order.source) + ", not True or False");
  }
  header.fortran_order = fortran_order.boolean;

  const Literal& shape = *values[2];
  if (shape.kind != Literal::Kind::tuple) {
    throw npy_error(path, "malformed header: 'shape' is " + std::string(shape.source) + ", not a tuple");
  }
  for (const Literal& item : shape.items) {
    if (item.kind != Literal::Kind::integer) {
      throw npy_error(path,
                      "malformed header: 'shape' entry " + std::string(item.source) + " is not a non-negative integer");
    }
    const auto dimension = parse_dimension(item.text);
    if (!dimension) throw npy_error(path, "size overflow: shape entry " + item.text + " does not fit in 64 bits");
    header.shape.push_back(*dimension);
  }
}

}  // namespace

std::string npy_printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

std::string npy_shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ",";
  return text + ")";
}

NpyError npy_error(const std::string& path, const std::string& problem) {
  return NpyError(npy_printable(path) + ": " + npy_printable(problem));
}

NpyHeader read_npy_header(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw npy_error(path, "cannot open for reading");

  // magic (6) + version (2) + header length (2 in 1.0, 4 in 2.0 and 3.0)
  std::array<unsigned char, 12> prefix{};
  file.read(reinterpret_cast<char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
  const auto prefix_bytes = static_cast<std::size_t>(file.gcount());
  if (prefix_bytes < kMagic.size() ||
      std::string_view(reinterpret_cast<const char*>(prefix.data()), kMagic.size()) != kMagic) {
    throw npy_error(path, "not an .npy file: it does not start with the magic bytes \\x93NUMPY");
  }
  if (prefix_bytes < 8) throw npy_error(path, "malformed header: the file ends inside the version bytes");

  NpyHeader header;
  header.major_version = prefix[6];
  header.minor_version = prefix[7];
  if (header.major_version < 1 || header.major_version > 3 || header.minor_version != 0) {
    throw npy_error(path, "unsupported .npy format version " + std::to_string(header.major_version) + "." +
                              std::to_string(header.minor_version) + " (this reader takes 1.0, 2.0 and 3.0)");
  }
  const int length_bytes = header.major_version == 1 ? 2 : 4;
  if (prefix_bytes < static_cast<std::size_t>(8 + length_bytes)) {
    throw npy_error(path, "malformed header: the file ends inside the header length field");
  }
  const std::uint64_t dict_bytes = little_endian(prefix.data() + 8, length_bytes);
  if (dict_bytes > kMaxHeaderBytes) {
    throw npy_error(path, "malformed header: the header length field says " + std::to_string(dict_bytes) +
                              " bytes, more than the " + std::to_string(kMaxHeaderBytes) + " this reader accepts");
  }
  header.data_offset = 8 + static_cast<std::uint64_t>(length_bytes) + dict_bytes;

  std::string dict(static_cast<std::size_t>(dict_bytes), '\0');
  file.clear();
  file.seekg(static_cast<std::streamoff>(8 + length_bytes));
  file.read(dict.data(), static_cast<std::streamsize>(dict.size()));
  if (static_cast<std::uint64_t>(file.gcount()) != dict_bytes) {
    throw npy_error(path, "malformed header: the header length field says " + std::to_string(dict_bytes) +
                              " bytes but the file ends after " + std::to_string(file.gcount()));
  }
  interpret_dict(DictParser(dict, path).parse_dict(), path, header);
  return header;
}

}  // namespace tilepath::numerics
