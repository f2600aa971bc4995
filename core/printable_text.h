#pragma once
// Text for a one-line message that quotes user input (JSON keys, flag values, file
// contents): newlines and tabs become spaces, other control bytes are spelled \xNN, so
// a NUL cannot end a C string early and the message stays one whole line.

#include <string>
#include <string_view>

namespace tilepath {

std::string printable_text(std::string_view text);

}  // namespace tilepath
