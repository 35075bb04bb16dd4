// UTF-8 as JSON strings and streamed text need it: whole, well-formed characters.
#pragma once

#include <string>

namespace sw {

// Whether `text` is well-formed UTF-8 (RFC 3629: no stray continuation bytes, no overlong
// forms, no surrogates, nothing past U+10FFFF), as a JSON string must be.
bool valid_utf8(const std::string& text);

// The length of `text` up to the end of its last whole character: the bytes of a character
// still being written (a lead byte whose continuation bytes have not come yet) are left out.
size_t whole_utf8_prefix(const std::string& text);

}  // namespace sw
