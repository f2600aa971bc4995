// SHA-256 used for artifact checksums, against the FIPS 180-4 example vectors
// and the boundary lengths where padding spills into a second block.
#include <gtest/gtest.h>

#include <string>

#include "core/sha256.h"

namespace tilepath {
namespace {

TEST(Sha256, StandardVectors) {
  EXPECT_EQ(sha256_hex(std::string()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(std::string("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundariesDifferAndAreStable) {
  // 55 bytes fit length + 0x80 in one block, 56 do not; 64 is exactly one block.
  std::string previous;
  for (std::size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    const std::string digest = sha256_hex(std::string(n, 'x'));
    EXPECT_EQ(digest.size(), 64u);
    EXPECT_NE(digest, previous) << n;
    EXPECT_EQ(digest, sha256_hex(std::string(n, 'x')));
    previous = digest;
  }
  // Known value for a 64-byte input (one full block plus a padding block).
  EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

}  // namespace
}  // namespace tilepath
