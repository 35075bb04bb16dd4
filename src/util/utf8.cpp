#include "util/utf8.h"

#include <algorithm>
#include <cstdint>

namespace sw {
namespace {

// The bytes of the character a lead byte begins, or 0 where the byte cannot begin one.
size_t sequence_length(unsigned char lead) {
  return lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
}

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

bool valid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const size_t length = sequence_length(s[i]);
    if (length == 0 || i + length > text.size()) return false;
    uint32_t code = length == 1 ? s[i] : s[i] & (0xFF >> (length + 1));
    for (size_t k = 1; k < length; ++k) {
      if (!is_continuation(s[i + k])) return false;
      code = (code << 6) | (s[i + k] & 0x3F);
    }
    static const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

size_t whole_utf8_prefix(const std::string& text) {
  for (size_t back = 1; back <= std::min<size_t>(4, text.size()); ++back) {
    const unsigned char c = (unsigned char)text[text.size() - back];
    if (is_continuation(c)) continue;  // look further back for the lead byte
    return sequence_length(c) > back ? text.size() - back : text.size();
  }
  return text.size();
}

}  // namespace sw
