// printable_text (core/printable_text.h): what one-line messages make of quoted input.
#include <gtest/gtest.h>

#include "core/printable_text.h"

using tilepath::printable_text;

TEST(PrintableText, ControlBytesAreSpelledAndLineBreaksBecomeSpaces) {
  EXPECT_EQ(printable_text(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable_text("a\nb\tc\rd"), "a b c d");
  EXPECT_EQ(printable_text("del\x7f"), "del\\x7f");
}

TEST(PrintableText, ValidUtf8StaysAndEveryOtherHighByteIsSpelled) {
  EXPECT_EQ(printable_text("µs ≤ 0 🙂"), "µs ≤ 0 🙂");
  EXPECT_EQ(printable_text("\xd8x"), "\\xd8x");                           // a lead byte without its continuation
  EXPECT_EQ(printable_text("\x80"), "\\x80");                             // a lone continuation byte
  EXPECT_EQ(printable_text("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(printable_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a UTF-16 surrogate
  EXPECT_EQ(printable_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(printable_text("\xe2\x89"), "\\xe2\\x89");                    // cut short at the end
}
