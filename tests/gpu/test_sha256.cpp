// SHA-256 against the FIPS 180-4 example digests.
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/sha256.h"

using tilepath::cuda::sha256_hex;

namespace {
std::string hash_of(const std::string& s) {
  return sha256_hex(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}
}  // namespace

TEST(Sha256, EmptyMessage) {
  EXPECT_EQ(hash_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, OneBlockMessage) {
  EXPECT_EQ(hash_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessageWhosePaddingSpillsIntoASecondBlock) {
  EXPECT_EQ(hash_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MillionAs) {
  EXPECT_EQ(hash_of(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
