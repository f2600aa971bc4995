#pragma once
// SHA-256 (FIPS 180-4), used to identify the exact cubin a kernel came from.
// Self-contained so that the plugin needs no crypto library at run time.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tilepath::cuda {

std::array<std::uint8_t, 32> sha256(const std::uint8_t* data, std::size_t size);
// Lower-case hex, 64 characters.
std::string sha256_hex(const std::uint8_t* data, std::size_t size);

}  // namespace tilepath::cuda
