// Reading a model's free output back into calls, in its format.
#include "engine/format/format.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/format/scan.h"

namespace sw {
namespace {

// The text inside every `open` ... `close` block (the last one may be unclosed). A block that
// holds JSON ends where its value ends, so a string in it may hold the closing marker.
std::vector<std::string> marked_blocks(const std::string& text, const std::string& open, const std::string& close) {
  std::vector<std::string> blocks;
  size_t at = 0;
  while ((at = text.find(open, at)) != std::string::npos) {
    size_t begin = at + open.size();
    const size_t value = text.find_first_not_of(" \t\r\n", begin);
    const bool json = value != std::string::npos && (text[value] == '{' || text[value] == '[');
    const size_t value_end = json ? json_value_end(text, value) : std::string::npos;
    // Without a closing marker each block runs to the next opening.
    const size_t end = text.find(close.empty() ? open : close, value_end == std::string::npos ? begin : value_end);
    blocks.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    at = close.empty() ? end : end + close.size();
  }
  return blocks;
}

std::string strip_code_fence(std::string text) {
  size_t first = text.find_first_of("[{");
  if (first == std::string::npos) return "";
  size_t last = text.find_last_of("]}");
  return text.substr(first, last == std::string::npos || last < first ? std::string::npos : last - first + 1);
}

Json arguments_object(const std::string& name, Json arguments) {
  if (arguments.is_string()) arguments = Json::parse(arguments.get<std::string>(), nullptr, false);
  if (!arguments.is_object()) throw Error("the arguments of '" + name + "' are not an object");
  return arguments;
}

ToolCall to_call(const Json& value, const CallFormat& format) {
  if (!value.is_object()) throw Error("a call is not a JSON object");
  const std::string& name_key = format.name_field;
  if (!value.contains(name_key) || !value[name_key].is_string()) throw Error("a call has no \"" + name_key + "\"");
  ToolCall call;
  call.name = value[name_key].get<std::string>();
  for (const std::string& key : {format.args_field, std::string("arguments"), std::string("parameters")}) {
    if (!value.contains(key)) continue;
    call.arguments = arguments_object(call.name, value[key]);
    break;
  }
  return call;
}

// The calls of a block whose calls name their tool in markers: name_prefix NAME name_suffix
// ... ARGUMENTS (a JSON object, or tagged members).
std::vector<ToolCall> marked_name_calls(const std::string& block, const CallFormat& format,
                                        const std::vector<ToolSpec>& tools) {
  std::vector<ToolCall> calls;
  size_t at = 0;
  // Calls with nothing before their names (python-like ones) begin after the separator.
  const std::string separator = trim_text(format.separator);
  for (;;) {
    if (format.name_prefix.empty() && !calls.empty()) {
      at = skip_space(block, at);
      if (block.compare(at, separator.size(), separator) != 0) break;
      at = skip_space(block, at + separator.size());
    }
    at = block.find(format.name_prefix, at);
    if (at == std::string::npos) break;
    const size_t name_begin = at + format.name_prefix.size();
    const size_t name_end = block.find(format.name_suffix, name_begin);
    if (name_end == std::string::npos) {
      if (!calls.empty() && format.name_prefix.empty()) break;  // the text after the last call
      throw Error("a call's name is not closed");
    }
    ToolCall call;
    call.name = block.substr(name_begin, name_end - name_begin);
    size_t begin = name_end + format.name_suffix.size();
    if (!format.arguments.named_members()) {
      begin = block.find('{', name_end);
      if (begin == std::string::npos) throw Error("the arguments of '" + call.name + "' are not a JSON object");
    } else if (block.compare(begin, format.args_prefix.size(), format.args_prefix) == 0) {
      begin += format.args_prefix.size();
    }
    const ToolSpec* tool = nullptr;
    for (const ToolSpec& t : tools) {
      if (t.name == call.name) tool = &t;
    }
    auto [arguments, end] = format.arguments_at(block, begin, tool);
    call.arguments = std::move(arguments);
    calls.push_back(std::move(call));
    at = end;
    const size_t suffix_at = skip_space(block, at);
    const std::string suffix = trim_text(format.call_suffix);
    if (!suffix.empty() && block.compare(suffix_at, suffix.size(), suffix) == 0) at = suffix_at + suffix.size();
  }
  return calls;
}

}  // namespace

std::pair<Json, size_t> CallFormat::arguments_at(const std::string& text, size_t begin, const ToolSpec* tool) const {
  const std::string tool_name = tool ? tool->name : "the call";
  if (!arguments.named_members()) {
    const size_t end = begin < text.size() && text[begin] == '{' ? json_value_end(text, begin) : std::string::npos;
    if (end == std::string::npos) throw Error("the arguments of '" + tool_name + "' are not a JSON object");
    Json value = Json::parse(text.substr(begin, end - begin), nullptr, false);
    if (value.is_discarded()) throw Error("the arguments of '" + tool_name + "' are not valid JSON");
    return {arguments_object(tool_name, std::move(value)), end};
  }
  const ArgumentSyntax& a = arguments;
  if (text.compare(begin, a.open.size(), a.open) != 0) throw Error("the arguments of '" + tool_name + "' do not open");
  Json values = Json::object();
  size_t at = begin + a.open.size();
  for (;;) {
    size_t next = skip_space(text, at);
    if (!values.empty() && !a.separator.empty() && text.compare(next, a.separator.size(), a.separator) == 0)
      next = skip_space(text, next + a.separator.size());
    if (!a.keywords && text.compare(next, a.name_prefix.size(), a.name_prefix) != 0) break;
    if (a.keywords && !is_identifier(text.substr(next, std::min(text.size(), text.find(a.name_suffix, next)) - next)))
      break;  // no keyword: the arguments end
    const size_t key_begin = next + a.name_prefix.size();
    const size_t key_end = text.find(a.name_suffix, key_begin);
    if (key_end == std::string::npos) throw Error("an argument's name in '" + tool_name + "' is not closed");
    const std::string key = text.substr(key_begin, key_end - key_begin);
    const size_t value_begin = key_end + a.name_suffix.size();
    const size_t value_end = a.keywords ? a.notation.value_end(text, value_begin) : text.find(a.value_suffix, value_begin);
    if (value_end == std::string::npos) throw Error("the value of '" + key + "' is not closed");
    const Property* argument = tool ? tool->find_argument(key) : nullptr;
    std::optional<Json> value = a.read_value(text.substr(value_begin, value_end + a.value_suffix.size() - value_begin),
                                             argument ? &argument->schema : nullptr);
    if (!value) throw Error("the value of '" + key + "' is not valid JSON or not UTF-8");
    values[key] = std::move(*value);
    at = value_end + a.value_suffix.size();
  }
  if (text.compare(at, a.close.size(), a.close) != 0) throw Error("the arguments of '" + tool_name + "' do not close");
  return {std::move(values), at + a.close.size()};
}

std::string CallFormat::call_close_marker() const {
  if (!arguments.named_members()) return "";
  for (const std::string* marker : {&call_suffix, &call_end, &closer}) {
    if (!trim_text(*marker).empty()) return trim_text(*marker);
  }
  return "";
}

std::vector<ToolCall> CallFormat::parse(const std::string& text, const std::vector<ToolSpec>& tools) const {
  if (!named) {
    if (tools.size() != 1) throw Error("internal: an answer in a schema is read with its one schema");
    const size_t begin = skip_space(text, 0);
    auto [object, end] = arguments_at(text, begin, &tools.front());
    if (skip_space(text, end) != text.size()) throw Error("the answer goes on after its JSON object");
    return {ToolCall{tools.front().name, std::move(object)}};
  }
  // Models sometimes drop their markers and write the bare call: accept that too.
  std::vector<std::string> blocks = call_start.empty() ? std::vector<std::string>{} : marked_blocks(text, call_start, call_end);
  if (blocks.empty()) {
    const size_t section = section_start.empty() ? std::string::npos : text.find(section_start);
    blocks.push_back(section == std::string::npos ? text : text.substr(section + section_start.size()));
  }
  std::vector<ToolCall> calls;
  for (const std::string& block : blocks) {
    if (!json_call) {
      for (ToolCall& call : marked_name_calls(block, *this, tools)) calls.push_back(std::move(call));
      continue;
    }
    std::string body = strip_code_fence(block);
    Json value = Json::parse(body, nullptr, false);
    if (value.is_discarded()) throw Error("the call is not valid JSON");
    if (value.is_array()) {
      for (const Json& item : value) calls.push_back(to_call(item, *this));
    } else {
      calls.push_back(to_call(value, *this));
    }
  }
  if (calls.empty()) throw Error("the output holds an empty list of calls");
  return calls;
}

}  // namespace sw
