// Small scans of call text shared by the format's readers and writers.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace sw {

// The first position from `at` that is not whitespace (text.size() if none).
inline size_t skip_space(const std::string& text, size_t at) {
  while (at < text.size() && std::isspace((unsigned char)text[at])) ++at;
  return at;
}

inline std::string trim_text(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(" \t\r\n") + 1 - first);
}

// Whether a name can be written bare, as a keyword (python-like calls, Gemma 4's keys).
inline bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit((unsigned char)name[0])) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
}

}  // namespace sw
