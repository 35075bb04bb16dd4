#include "engine/model/format.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "engine/chat/llama_chat.h"
#include "util/utf8.h"

namespace sw {
namespace {

std::string tools_json_lines(const std::vector<ToolSpec>& tools, const char* separator) {
  std::string out;
  for (size_t i = 0; i < tools.size(); ++i) {
    if (i) out += separator;
    out += dump_json(tools[i].to_openai());
  }
  return out;
}

// SmolLM2-Instruct was tuned on this instruction with a JSON list of tools.
std::string smollm2_prompt(const std::vector<ToolSpec>& tools, const std::string&) {
  return "You are an expert in composing functions. You are given a question and a set of possible "
         "functions.\nBased on the question, you will need to make one or more function/tool calls "
         "to achieve the purpose.\nIf none of the functions can be used, point it out and refuse to "
         "answer.\nIf the given question lacks the parameters required by the function, also point "
         "it out.\nYou have access to the following tools:\n<tools>[" +
         tools_json_lines(tools, ", ") +
         "]</tools>\nThe output MUST strictly adhere to the following format, and NO other text "
         "MUST be included.\nThe example format is as follows. Please make sure the parameter type "
         "is correct. If no function call is needed, please make the tool calls an empty list "
         "'[]'.\n<tool_call>[\n{\"name\": \"func_name1\", \"arguments\": {\"argument1\": \"value1\", "
         "\"argument2\": \"value2\"}},\n... (more tool calls as required)\n]</tool_call>";
}

// Qwen2.5's chat template renders tools this way (Hermes-style <tool_call> blocks).
std::string hermes_prompt(const std::vector<ToolSpec>& tools, const std::string& user_system) {
  std::string head = user_system.empty()
                         ? "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
                         : user_system;
  return head +
         "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou "
         "are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
         tools_json_lines(tools, "\n") +
         "\n</tools>\n\nFor each function call, return a json object with function name and "
         "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
         "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
}

// For models without a native format (Gemma 3): a plain instruction and a JSON list.
std::string json_prompt(const std::vector<ToolSpec>& tools, const std::string& user_system) {
  std::string head = user_system.empty() ? "" : user_system + "\n\n";
  return head +
         "You can call the following tools. Each is described by a JSON schema of its "
         "arguments:\n" +
         tools_json_lines(tools, "\n") +
         "\n\nTo call tools, answer with only a JSON list of calls, each written as "
         "{\"name\": <tool name>, \"arguments\": <arguments object>}, for example:\n"
         "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]";
}

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

size_t skip_space(const std::string& text, size_t at) {
  while (at < text.size() && std::isspace((unsigned char)text[at])) ++at;
  return at;
}

std::string trim_text(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(" \t\r\n") + 1 - first);
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

// Whether a name can be written bare, as a keyword (python-like calls, Gemma 4's keys).
bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit((unsigned char)name[0])) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
}

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

std::string CallFormat::system_prompt(const std::vector<ToolSpec>& tools,
                                      const std::string& user_system) const {
  if (family == "smollm2") return smollm2_prompt(tools, user_system);
  if (family == "hermes") return hermes_prompt(tools, user_system);
  return json_prompt(tools, user_system);
}

std::string CallFormat::calls_text(const std::vector<ToolCall>& calls) const {
  std::string text = opener;
  for (size_t i = 0; i < calls.size(); ++i) text += (i ? separator : "") + call_text(calls[i]);
  return text + closer;
}

std::pair<std::string, std::string> CallFormat::tool_result(const std::string& content) const {
  // Qwen2.5's template hands results back in the user's turn, each in a <tool_response> block.
  if (family == "hermes") return {"user", "<tool_response>\n" + content + "\n</tool_response>"};
  return {"tool", content};
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

CallFormat CallFormat::by_name(const std::string& name) {
  CallFormat f;
  f.name = name;
  if (name == "smollm2") {
    f.family = "smollm2";
    f.opener = "<tool_call>[", f.separator = ", ", f.closer = "]</tool_call>";
    f.call_start = "<tool_call>", f.call_end = "</tool_call>";
    f.list = true;
  } else if (name == "hermes") {
    f.family = "hermes";
    f.opener = "<tool_call>\n", f.separator = "\n</tool_call>\n<tool_call>\n", f.closer = "\n</tool_call>";
    f.call_start = "<tool_call>", f.call_end = "</tool_call>";
  } else if (name == "hermes-list") {
    return by_name("hermes").as_list();
  } else if (name == "json") {
    f.family = "json";
    f.opener = "[", f.separator = ", ", f.closer = "]";
    f.list = true;
  } else {
    throw Error("unknown call format '" + name + "' (known: smollm2, hermes, hermes-list, json)");
  }
  return f;
}

CallFormat CallFormat::schema_answer() {
  CallFormat f;
  f.name = "schema";
  f.family = "template";  // shows no tools: the caller's messages ask for the answer
  f.name_prefix = f.name_suffix = f.args_prefix = f.call_suffix = "";
  f.parallel = false;
  f.named = false;
  return f;
}

CallFormat CallFormat::as_list() const {
  if (!named) throw Error("an answer in a schema is one object: it makes no list of calls");
  if (list) return *this;
  if (!json_call) throw Error("the calls of this model's format name their tool outside JSON: they make no JSON list");
  if (call_start.empty()) throw Error("this model's format has no markers to hold a list of calls");
  // The calls as one JSON list in one block, laid out as Qwen2.5 writes a list.
  CallFormat f = *this;
  f.name = name + "-list";
  f.opener = opener + "[\n    ";
  f.separator = ",\n    ";
  f.closer = "\n]" + closer;
  f.list = true;
  return f;
}

CallFormat CallFormat::opened_as(const std::string& fence, bool in_list) const {
  if (!named || !json_call) throw Error("internal: only calls that are JSON objects are written as opened");
  CallFormat f = *this;
  f.name = name + (fence.empty() ? "-bare" : "-fenced") + (in_list ? "-list" : "");
  f.call_start = f.call_end = f.section_start = "";
  f.opener = fence + (in_list ? "[" : "");
  f.separator = in_list ? ", " : "";
  f.closer = std::string(in_list ? "]" : "") + (fence.empty() ? "" : "\n```");
  f.list = f.parallel = in_list;
  return f;
}

namespace {

// The template's own text of a sample turn, cut into a format's pieces where the analysis says
// the markers and the sample's names and arguments are. Throws Error when the sample does not
// hold what the analysis describes.
class SampleTurn {
 public:
  SampleTurn(const llama_chat::CallAnalysis& a, CallFormat& f) : a_(a), f_(f), text_(a.sample) {}

  void cut() {
    const int calls = a_.parallel ? 2 : 1;
    size_t call_begin[2] = {0, 0}, call_end[2] = {0, 0};
    size_t from = 0;
    for (int i = 0; i < calls; ++i) {
      locate_call(i, from, call_begin[i], call_end[i]);
      from = call_end[i];
    }
    const size_t turn_begin = opening_marker(call_begin[0]);
    f_.opener = text_.substr(turn_begin, call_begin[0] - turn_begin);
    if (calls == 2) f_.separator = text_.substr(call_end[0], call_begin[1] - call_end[0]);
    const size_t last = call_end[calls - 1];
    f_.closer = text_.substr(last, closing_marker(last) - last);
  }

 private:
  static constexpr const char* const* kNames = llama_chat::CallAnalysis::kSampleNames;

  void locate_call(int i, size_t from, size_t& begin, size_t& end) {
    const std::string name = kNames[i];
    const size_t at = text_.find(name, from);
    if (at == std::string::npos) throw Error("the template's sample turn does not name its tool");
    // A JSON call begins at its object's brace (the name prefix is what the template writes up to
    // the name); a call that names its tool in markers begins at the analysis's name prefix.
    if (f_.json_call) {
      begin = text_.rfind('{', at);
      if (begin == std::string::npos || begin < from) throw Error("the template's call is not a JSON object");
      if (i == 0) f_.name_prefix = text_.substr(begin, at - begin);
    } else {
      // With no marker around the calls, what the turn writes before the name marks a call
      // (gpt-oss: " to=functions.NAME"), where the analysis leaves the name's prefix empty.
      if (i == 0 && f_.name_prefix.empty() && a_.call_start.empty() && a_.section_start.empty())
        f_.name_prefix = text_.substr(from, at - from);
      begin = at - std::min(at, f_.name_prefix.size());
      if (text_.compare(begin, f_.name_prefix.size(), f_.name_prefix) != 0)
        throw Error("the template's call does not hold the name's markers the analysis found");
    }
    const size_t after = at + name.size();
    if (text_.compare(after, f_.name_suffix.size(), f_.name_suffix) != 0)
      throw Error("the template's call does not end the tool's name as the analysis found");
    if (f_.arguments.tagged) return locate_tagged_arguments(i, after + f_.name_suffix.size(), end);
    const size_t args = text_.find('{', after);
    const size_t args_end = args == std::string::npos ? args : json_value_end(text_, args);
    if (args_end == std::string::npos) throw Error("the template's call holds no arguments object");
    const size_t args_from = after + f_.name_suffix.size();
    if (i == 0) f_.args_prefix = text_.substr(args_from, args - args_from);
    if (f_.json_call) {
      end = json_value_end(text_, begin);
      if (end == std::string::npos || args > end) throw Error("the template's call holds no arguments object");
      if (i == 0) cut_id(args_end, end, i);
      return;
    }
    const size_t close_at = a_.close.empty() ? args_end : text_.find(a_.close, args_end);
    end = close_at == std::string::npos ? args_end : close_at + a_.close.size();
    if (i == 0) f_.call_suffix = text_.substr(args_end, end - args_end);
  }

  // A tagged call's sample argument (its name and value) from `from` on, the text between as
  // the call's args_prefix and the text after it to the call's close as its call_suffix.
  void locate_tagged_arguments(int i, size_t from, size_t& end) {
    static const char* const kValues[2] = {"x", "7"};  // kSampleArguments' values, as a template writes them
    const std::string key = Json::parse(llama_chat::CallAnalysis::kSampleArguments[i]).begin().key();
    const std::string member = f_.arguments.key_text(key) + kValues[i] + f_.arguments.value_suffix;
    const size_t at = text_.find(member, from);
    if (at == std::string::npos) throw Error("the template's call does not write its argument as the analysis found");
    if (i == 0) f_.args_prefix = text_.substr(from, at - from);
    const size_t members_end = at + member.size();
    const size_t close_at = a_.close.empty() ? members_end : text_.find(a_.close, members_end);
    end = close_at == std::string::npos ? members_end : close_at + a_.close.size();
    if (i == 0) f_.call_suffix = text_.substr(members_end, end - members_end);
  }

  // The sample's call id between the arguments' end and the call's, if the template writes one.
  void cut_id(size_t args_end, size_t call_end, int i) {
    const std::string id = std::string("\"") + llama_chat::CallAnalysis::kSampleIds[i] + "\"";
    const size_t at = text_.find(id, args_end);
    if (at == std::string::npos || at >= call_end) return;
    f_.id_prefix = text_.substr(args_end, at - args_end);
    f_.id_length = int(id.size()) - 2;
    f_.call_suffix = text_.substr(at + id.size(), call_end - at - id.size());
  }

  // Where the turn's calls open: the section's or the first call's marker, or a list's bracket.
  size_t opening_marker(size_t first_call) const {
    for (const std::string& marker : {a_.section_start, a_.call_start}) {
      if (marker.empty()) continue;
      const size_t at = text_.rfind(marker, first_call);
      if (at != std::string::npos) return at;
    }
    if (a_.list) {
      const size_t at = text_.rfind('[', first_call);
      if (at != std::string::npos) return at;
    }
    return first_call;
  }

  // One past where the turn's calls close: the section's or the last call's marker, or a list's
  // bracket.
  size_t closing_marker(size_t last_call) const {
    for (const std::string& marker : {a_.section_end, a_.call_end, std::string(a_.list ? "]" : "")}) {
      if (marker.empty()) continue;
      const size_t at = text_.find(marker, last_call);
      if (at != std::string::npos) return at + marker.size();
    }
    return last_call;
  }

  const llama_chat::CallAnalysis& a_;
  CallFormat& f_;
  const std::string& text_;
};

// The analysis with a tagged value's suffix cut where llama.cpp's analysis runs it on into what
// follows the call's last argument, for a template whose calls it finds no close of: MiniCPM5's
// "</param></function><|im_end|>" is the value's "</param>", then the call's close "</function>".
// (Checked, as every derived format, by llama.cpp's parser reading the sample calls back.)
llama_chat::CallAnalysis with_value_suffix_cut(llama_chat::CallAnalysis a) {
  if (a.mode != "TAG_WITH_TAGGED" || !a.close.empty()) return a;
  const std::string& suffix = a.arg_value_suffix;
  const size_t first_end = suffix.find('>');
  if (first_end == std::string::npos) return a;
  const size_t next_begin = suffix.find('<', first_end);
  const size_t next_end = next_begin == std::string::npos ? next_begin : suffix.find('>', next_begin);
  if (next_end == std::string::npos) return a;
  a.close = suffix.substr(next_begin, next_end + 1 - next_begin);
  a.arg_value_suffix = suffix.substr(0, first_end + 1);
  return a;
}

// Why the analysis gives no format this library can write ("" when it does).
std::string unwritable(const llama_chat::CallAnalysis& a) {
  if (!a.supports_tools) return "the template does not show the model its tools";
  if (a.mode == "NONE") return "llama.cpp's template analysis finds no tool calls in the template";
  if (a.mode != "JSON_NATIVE" && a.mode != "TAG_WITH_JSON" && a.mode != "TAG_WITH_TAGGED")
    return "llama.cpp's analysis names an unknown syntax '" + a.mode + "'";
  if (a.name_is_key) return "its calls use the tool's name as a JSON key";
  if (a.id_in_markers) return "its calls carry an id in markers of its own, not written here yet";
  if (a.name_field.find('.') != std::string::npos) return "its calls nest the name in a wrapper object";
  if (a.mode != "JSON_NATIVE" && a.name_suffix.empty() && a.args_separator.empty())
    return "nothing ends a tool's name in its calls";
  if (a.mode == "TAG_WITH_TAGGED" && a.arg_value_suffix.empty()) return "nothing ends an argument's value in its calls";
  if (a.mode == "TAG_WITH_TAGGED" && a.arg_name_suffix.empty() && a.arg_value_prefix.empty())
    return "nothing ends an argument's name in its calls";
  return "";
}

// Whether llama.cpp's parser of the template reads the format's text of the sample calls,
// after `before` (what an answer starts with), back as those calls.
bool reads_sample_calls(const llama_chat::Templates& templates, const CallFormat& format, const std::string& before) {
  const int count = format.parallel ? 2 : 1;
  std::vector<ToolCall> calls;
  for (int i = 0; i < count; ++i)
    calls.push_back({llama_chat::CallAnalysis::kSampleNames[i], Json::parse(llama_chat::CallAnalysis::kSampleArguments[i])});
  return templates.reads_as_sample(before + format.calls_text(calls), count);
}

// The format the analysis describes, its texts cut from the template's sample turn. Throws
// Error when the sample does not hold what the analysis describes.
CallFormat analysed_format(const llama_chat::CallAnalysis& analysis) {
  CallFormat f;
  f.name = "template";
  f.family = "template";
  f.json_call = analysis.mode == "JSON_NATIVE";
  if (f.json_call) {
    f.name_field = analysis.name_field;
    f.args_field = analysis.args_field;
  } else {
    // Where no marker follows the name, the marker before the arguments ends it (Mistral's [ARGS]).
    f.name_prefix = analysis.name_prefix;
    f.name_suffix = analysis.name_suffix.empty() ? analysis.args_separator : analysis.name_suffix;
  }
  if (analysis.mode == "TAG_WITH_TAGGED") {
    // The members' own start and end markers (none in the templates seen) stay in the call's
    // args_prefix and call_suffix, cut from the sample.
    ArgumentSyntax& a = f.arguments;
    a.tagged = true;
    a.open = a.close = "";
    a.name_prefix = analysis.arg_name_prefix;
    a.name_suffix = analysis.arg_name_suffix + analysis.arg_value_prefix;
    a.value_suffix = analysis.arg_value_suffix;
    a.separator = analysis.arg_separator;
  }
  f.call_start = analysis.call_start;
  f.call_end = analysis.call_end;
  f.section_start = analysis.section_start;
  f.parallel = analysis.parallel;
  f.list = analysis.list;
  SampleTurn(analysis, f).cut();
  // Another call is decided where the separator begins: calls with nothing between them are
  // written one a turn.
  if (f.separator.empty()) f.parallel = false;
  return f;
}

// The calls of a handler's syntax written here: the tool named in markers (`name_suffix` ends
// the name), its arguments keywords (KEY `key_suffix` VALUE, joined by `member_separator`), then
// `call_suffix`; the turn's markers are the caller's to set.
CallFormat keyword_calls(const std::string& name_suffix, const std::string& key_suffix,
                         const std::string& member_separator, const std::string& call_suffix) {
  CallFormat f;
  f.name = f.family = "template";
  f.json_call = false;
  f.name_suffix = name_suffix;
  f.args_prefix = "";
  f.call_suffix = call_suffix;
  ArgumentSyntax& a = f.arguments;
  a.keywords = true;
  a.open = a.close = a.name_prefix = "";
  a.name_suffix = key_suffix;
  a.separator = member_separator;
  return f;
}

// The format as llama.cpp's parser of the template reads it: itself where the parser reads the
// format's text of the sample calls back into those calls, else one call a turn where it reads
// that (MiniMax-M2's parser expects parallel calls separated by ", ", where its template writes a
// newline); nullopt where it reads neither. `before`: what an answer starts with.
std::optional<CallFormat> as_llama_reads(const llama_chat::Templates& templates, const CallFormat& f,
                                         const std::string& before) {
  if (reads_sample_calls(templates, f, before)) return f;
  CallFormat single = f;
  single.parallel = false;
  if (f.parallel && reads_sample_calls(templates, single, before)) return single;
  return std::nullopt;
}

}  // namespace

// The python-like calls llama.cpp reads with LFM2's handler of its own, whose templates its
// analysis finds no calls in (LFM2.5-Instruct's does not write them):
// <|tool_call_start|>[NAME(KEY=VALUE, ...), ...]<|tool_call_end|>, each value JSON.
CallFormat CallFormat::python_like_calls() {
  CallFormat f = keyword_calls("(", "=", ", ", ")");
  // The marker opens the turn's calls, which are read one after another to their ends (a string
  // may hold the markers: the text is not cut at them).
  f.opener = f.section_start = "<|tool_call_start|>[";
  f.closer = "]<|tool_call_end|>";
  f.separator = ", ";
  f.name_prefix = "";
  return f;
}

// Gemma 4's calls, which llama.cpp reads with a handler of its own (its analysis misreads them):
// <|tool_call>call:NAME{KEY:VALUE,...}<tool_call|> per call, the values in Gemma 4's notation
// (ValueNotation: strings raw between <|"|>, keys bare). The next call's marker is the separator
// (calls follow one another with nothing between), so that it is what decides another call.
CallFormat CallFormat::gemma4_calls() {
  CallFormat f = keyword_calls("{", ":", ",", "}<tool_call|>");
  f.arguments.notation.string_quote = "<|\"|>";
  f.opener = f.separator = f.section_start = "<|tool_call>";
  f.closer = "";
  f.name_prefix = "call:";
  return f;
}

CallFormat CallFormat::detect(const std::string& chat_template, bool has_tool_call_token) {
  if (chat_template.find("<tool_call>") != std::string::npos || has_tool_call_token) return by_name("hermes");
  if (chat_template.find("SmolLM") != std::string::npos) return by_name("smollm2");
  return by_name("json");
}

CallFormat CallFormat::derive(const llama_chat::CallAnalysis& found, const llama_chat::Templates& templates,
                              const llama_chat::ReasoningBlock& reasoning, const std::string& chat_template,
                              bool has_tool_call_token) {
  const llama_chat::CallAnalysis analysis = with_value_suffix_cut(found);
  // An answer to a template that always opens a thinking block starts with its close.
  const std::string before = reasoning.always_open ? reasoning.close : "";
  std::string why = unwritable(analysis);
  if (why.empty()) {
    try {
      if (std::optional<CallFormat> read = as_llama_reads(templates, analysed_format(analysis), before)) return *read;
      why = analysis.specialized ? "llama.cpp reads this template's calls with a handler of its own, which does not "
                                   "read them as its template analysis describes them"
                                 : "llama.cpp's parser does not read the calls as its template analysis describes them";
    } catch (const Error& e) {
      why = e.what();
    }
  }
  // The syntaxes of llama.cpp's handlers written here, for a template it reads with a handler of
  // its own: each kept only where that handler's parser reads it back.
  if (analysis.specialized && analysis.supports_tools) {
    for (const CallFormat& written : {python_like_calls(), gemma4_calls()}) {
      if (std::optional<CallFormat> read = as_llama_reads(templates, written, before)) return *read;
    }
  }
  CallFormat f = detect(chat_template, has_tool_call_token);
  f.fallback_reason = why;
  return f;
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

std::string CallFormat::call_text(const ToolCall& call) const {
  const std::string id = id_prefix.empty() ? "" : id_prefix + "\"" + std::string(size_t(id_length), '0') + "\"";
  return call_head(call.name) + arguments.members_text(call.arguments) + id + call_suffix;
}

}  // namespace sw
