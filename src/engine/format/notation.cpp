#include "engine/format/notation.h"

#include <cstring>

#include "engine/format/scan.h"
#include "util/utf8.h"

namespace sw {
namespace {

// Whether a value of the schema may be a string, and whether it may be something else.
void value_kinds(const Schema& schema, bool& string, bool& other) {
  if (!schema.enum_values.empty()) {
    for (const Json& v : schema.enum_values) (v.is_string() ? string : other) = true;
  } else if (!schema.any_of.empty()) {
    for (const Schema& option : schema.any_of) value_kinds(option, string, other);
  } else {
    (schema.type == Type::String ? string : other) = true;
  }
}

// Reads values in a notation with strings between quotes of the model's own (ValueNotation),
// allowing spaces around items as llama.cpp's parser does.
class NotationReader {
 public:
  NotationReader(const std::string& text, const std::string& quote) : text_(text), quote_(quote) {}

  // The value that begins at `at`, `at` moved past it; nullopt where there is none complete (or
  // it nests deeper than any schema here would: the reader's stack stays bounded).
  std::optional<Json> value(size_t& at, int depth = 0) const {
    if (at >= text_.size() || depth > kMaxDepth) return std::nullopt;
    if (text_.compare(at, quote_.size(), quote_) == 0) {
      const size_t begin = at + quote_.size(), end = text_.find(quote_, begin);
      if (end == std::string::npos || !valid_utf8(text_.substr(begin, end - begin))) return std::nullopt;
      at = end + quote_.size();
      return Json(text_.substr(begin, end - begin));
    }
    if (text_[at] == '{' || text_[at] == '[') return container(at, depth);
    const size_t end = json_value_end(text_, at);
    if (end == std::string::npos) return std::nullopt;
    Json scalar = Json::parse(text_.substr(at, end - at), nullptr, false);
    if (scalar.is_discarded() || scalar.is_structured() || scalar.is_string()) return std::nullopt;
    at = end;
    return scalar;
  }

 private:
  static constexpr int kMaxDepth = 256;

  // {key:value,...} or [value,...] from `at`.
  std::optional<Json> container(size_t& at, int depth) const {
    const bool object = text_[at] == '{';
    const char close = object ? '}' : ']';
    Json out = object ? Json::object() : Json::array();
    size_t i = skip_space(text_, at + 1);
    if (i < text_.size() && text_[i] == close) {
      at = i + 1;
      return out;
    }
    for (;;) {
      std::string key;
      if (object) {
        const size_t colon = text_.find(':', i);
        if (colon == std::string::npos) return std::nullopt;
        key = text_.substr(i, colon - i);
        if (key.empty() || key.find('}') != std::string::npos) return std::nullopt;
        i = skip_space(text_, colon + 1);
      }
      std::optional<Json> item = value(i, depth + 1);
      if (!item) return std::nullopt;
      if (object) out[key] = std::move(*item);
      else out.push_back(std::move(*item));
      i = skip_space(text_, i);
      if (i < text_.size() && text_[i] == ',') {
        i = skip_space(text_, i + 1);
        continue;
      }
      if (i >= text_.size() || text_[i] != close) return std::nullopt;
      at = i + 1;
      return out;
    }
  }

  const std::string& text_;
  const std::string& quote_;
};

}  // namespace

std::string ValueNotation::text(const Json& value) const {
  if (json()) return dump_json(value);
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s.find(string_quote) != std::string::npos)
      throw Error("a string holding " + string_quote + " cannot be written in this model's calls");
    return string_quote + s + string_quote;
  }
  if (!value.is_structured()) return dump_json(value);
  std::string out(1, value.is_object() ? '{' : '[');
  for (auto it = value.begin(); it != value.end(); ++it)
    out += (it == value.begin() ? "" : ",") + (value.is_object() ? it.key() + ":" : "") + text(it.value());
  return out + (value.is_object() ? '}' : ']');
}

size_t ValueNotation::value_end(const std::string& text, size_t begin) const {
  if (json()) return json_value_end(text, begin);
  return NotationReader(text, string_quote).value(begin) ? begin : std::string::npos;
}

std::optional<Json> ValueNotation::read(const std::string& text) const {
  if (json()) {
    Json value = Json::parse(text, nullptr, false);
    return value.is_discarded() ? std::nullopt : std::optional<Json>(std::move(value));
  }
  size_t at = skip_space(text, 0);
  std::optional<Json> value = NotationReader(text, string_quote).value(at);
  return value && skip_space(text, at) == text.size() ? value : std::nullopt;
}

ArgumentSyntax ArgumentSyntax::nested() const {
  ArgumentSyntax syntax;
  if (notation.json()) return syntax;
  syntax.keywords = true;
  syntax.notation = notation;
  syntax.name_prefix = "";
  syntax.name_suffix = ":";
  syntax.separator = ",";
  return syntax;
}

std::string ArgumentSyntax::key_text(const std::string& name) const {
  if (keywords && !is_identifier(name))
    throw Error("the argument '" + name + "' cannot be written in this model's calls: they write its name bare, "
                "and it is not an identifier");
  return named_members() ? name_prefix + name + name_suffix : dump_json(Json(name)) + ": ";
}

bool ArgumentSyntax::raw(const Schema& schema) const {
  if (!tagged) return false;
  bool string = false, other = false;
  value_kinds(schema, string, other);
  if (string && other)
    throw Error("a value that may be a string or of another kind cannot be written in this model's tagged "
                "syntax: a string is written raw there, and llama.cpp's parser reads every such value as a string");
  return string;
}

std::optional<Json> ArgumentSyntax::read_value(const std::string& text, const Schema* schema) const {
  std::string body = text;
  if (tagged) {
    if (body.size() < value_suffix.size() || body.compare(body.size() - value_suffix.size(), value_suffix.size(), value_suffix) != 0)
      return std::nullopt;
    body.resize(body.size() - value_suffix.size());
  }
  if (schema && raw(*schema)) return valid_utf8(body) ? std::optional<Json>(Json(body)) : std::nullopt;
  if (std::optional<Json> value = notation.read(body)) return value;
  // A tagged value of a tool the caller did not describe: a string where it is not JSON.
  if (tagged && !schema && valid_utf8(body)) return Json(body);
  return std::nullopt;
}

std::string ArgumentSyntax::members_text(const Json& arguments) const {
  if (!named_members()) return dump_json(arguments);
  std::string text = open;
  bool first = true;
  for (auto it = arguments.begin(); it != arguments.end(); ++it) {
    text += (first ? "" : separator) + key_text(it.key()) +
            (tagged && it.value().is_string() ? it.value().get<std::string>() : notation.text(it.value())) + value_suffix;
    first = false;
  }
  return text + close;
}

size_t json_value_end(const std::string& text, size_t begin) {
  if (begin >= text.size()) return std::string::npos;
  if (text[begin] != '{' && text[begin] != '[' && text[begin] != '"') {
    // A number, true, false or null: its run of characters.
    size_t end = begin;
    while (end < text.size() && (std::isalnum((unsigned char)text[end]) || std::strchr("+-.", text[end]))) ++end;
    return end == begin ? std::string::npos : end;
  }
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = begin; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;  // a string alone
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string::npos;
}

}  // namespace sw
