#include "engine/decode/call_deltas.h"

#include <cctype>

#include "util/utf8.h"

namespace sw {
namespace {

bool hex_digits(const std::string& text, size_t at, size_t count) {
  if (at + count > text.size()) return false;
  for (size_t i = at; i < at + count; ++i) {
    if (!std::isxdigit((unsigned char)text[i])) return false;
  }
  return true;
}

// Where a JSON string's content that begins at `begin` may be cut in `text` (which ends inside
// it): after its last whole escape - a high surrogate's \u escape waits for its low half - and
// whole UTF-8 character.
size_t string_cut(const std::string& text, size_t begin) {
  size_t cut = begin;
  for (size_t i = begin; i < text.size();) {
    if (text[i] != '\\') {
      cut = ++i;
      continue;
    }
    if (i + 1 >= text.size()) break;
    size_t length = 2;
    if (text[i + 1] == 'u') {
      if (!hex_digits(text, i + 2, 4)) break;
      const unsigned code = unsigned(std::stoul(text.substr(i + 2, 4), nullptr, 16));
      length = code >= 0xD800 && code <= 0xDBFF ? 12 : 6;
      if (length == 12 && !(i + 7 < text.size() && text[i + 6] == '\\' && text[i + 7] == 'u' && hex_digits(text, i + 8, 4)))
        break;
    }
    cut = i += length;
  }
  return begin + whole_utf8_prefix(text.substr(begin, cut - begin));
}

// dump_json of `text` + `closers` (valid JSON), less the closers' characters at its end.
std::string dump_less(const std::string& text, const std::string& closers) {
  const Json value = Json::parse(text + closers, nullptr, false);
  if (value.is_discarded()) return "";  // not JSON after all: nothing is fixed
  const std::string dumped = dump_json(value);
  return dumped.substr(0, dumped.size() - closers.size());
}

}  // namespace

std::string fixed_dump_prefix(const std::string& text, size_t& end) {
  end = std::string::npos;
  std::string closers;             // of the containers open, innermost last
  size_t safe = std::string::npos;  // the last place where text + closers is JSON
  std::string safe_closers;
  bool in_string = false, in_key = false, escaped = false, expect_key = false;
  size_t string_begin = 0, scalar_begin = std::string::npos;
  auto mark_safe = [&](size_t at) {
    safe = at;
    safe_closers.assign(closers.rbegin(), closers.rend());
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        if (!in_key) mark_safe(i + 1);
      }
      continue;
    }
    if (scalar_begin != std::string::npos) {
      if (std::isalnum((unsigned char)c) || c == '.' || c == '+' || c == '-') continue;
      scalar_begin = std::string::npos;  // a number or literal ends where something else begins
      mark_safe(i);
    }
    if (std::isspace((unsigned char)c)) continue;
    switch (c) {
      case '{':
      case '[':
        closers += c == '{' ? '}' : ']';
        expect_key = c == '{';
        mark_safe(i + 1);
        break;
      case '}':
      case ']':
        if (closers.empty()) return "";
        closers.pop_back();
        mark_safe(i + 1);
        if (closers.empty()) {
          end = i + 1;
          return dump_less(text.substr(0, end), "");
        }
        break;
      case ',':
        expect_key = !closers.empty() && closers.back() == '}';
        break;
      case ':':
        expect_key = false;
        break;
      case '"':
        in_string = true;
        in_key = expect_key;
        string_begin = i + 1;
        break;
      default:
        scalar_begin = i;
    }
  }
  if (in_string && !in_key) {
    const size_t cut = string_cut(text, string_begin);
    const std::string rest(closers.rbegin(), closers.rend());
    return dump_less(text.substr(0, cut), "\"" + rest);
  }
  return safe == std::string::npos ? "" : dump_less(text.substr(0, safe), safe_closers);
}

bool CallDeltas::streams(const CallFormat& format) {
  return format.named && format.json_call && !format.arguments.named_members() && format.arguments.notation.json();
}

void CallDeltas::feed(const std::string& more) {
  text_ += more;
  while (arguments_at_ != std::string::npos || find_head()) {
    size_t end;
    const std::string fixed = fixed_dump_prefix(text_.substr(arguments_at_), end);
    if (fixed.size() > told_.size() && fixed.compare(0, told_.size(), told_) == 0) {
      tell_({index_, "", fixed.substr(told_.size())});
      told_ = fixed;
    }
    if (end == std::string::npos) return;
    scan_ = arguments_at_ + end;
    arguments_at_ = std::string::npos;
    told_.clear();
  }
}

bool CallDeltas::find_head() {
  while (true) {
    const size_t head = text_.find(format_.name_prefix, scan_);
    if (head == std::string::npos) return false;
    const size_t name_at = head + format_.name_prefix.size();
    const size_t name_end = text_.find(format_.name_suffix, name_at);
    if (name_end == std::string::npos) return false;
    const size_t arguments_at = name_end + format_.name_suffix.size() + format_.args_prefix.size();
    if (text_.size() < arguments_at) return false;
    if (text_.compare(name_end + format_.name_suffix.size(), format_.args_prefix.size(), format_.args_prefix) != 0) {
      scan_ = head + 1;  // not a call's head after all
      continue;
    }
    arguments_at_ = arguments_at;
    tell_({++index_, text_.substr(name_at, name_end - name_at), ""});
    return true;
  }
}

}  // namespace sw
