#pragma once
// Text for a one-line message that quotes user input (JSON keys, flag values, file
// contents): newlines and tabs become spaces, other control bytes and bytes that are not
// part of valid UTF-8 are spelled \xNN, so a NUL cannot end a C string early, the message
// stays one whole line, and a terminal or a JSON reader gets valid UTF-8.

#include <string>
#include <string_view>

namespace tilepath {

std::string printable_text(std::string_view text);

}  // namespace tilepath
