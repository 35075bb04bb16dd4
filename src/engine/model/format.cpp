#include "engine/model/format.h"

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

// The text inside every <tag>...</tag> block (the last one may be unclosed). A block that holds
// JSON ends where its value ends, so a string in it may hold the closing tag.
std::vector<std::string> tagged_blocks(const std::string& text, const std::string& tag) {
  std::vector<std::string> blocks;
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  size_t at = 0;
  while ((at = text.find(open, at)) != std::string::npos) {
    size_t begin = at + open.size();
    const size_t value = text.find_first_not_of(" \t\r\n", begin);
    const bool json = value != std::string::npos && (text[value] == '{' || text[value] == '[');
    const size_t value_end = json ? json_value_end(text, value) : std::string::npos;
    size_t end = text.find(close, value_end == std::string::npos ? begin : value_end);
    blocks.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    at = end + close.size();
  }
  return blocks;
}

std::string strip_code_fence(std::string text) {
  size_t first = text.find_first_of("[{");
  if (first == std::string::npos) return "";
  size_t last = text.find_last_of("]}");
  return text.substr(first, last == std::string::npos || last < first ? std::string::npos : last - first + 1);
}

ToolCall to_call(const Json& value) {
  if (!value.is_object()) throw Error("a call is not a JSON object");
  if (!value.contains("name") || !value["name"].is_string()) throw Error("a call has no \"name\"");
  ToolCall call;
  call.name = value["name"].get<std::string>();
  const char* key = value.contains("arguments") ? "arguments" : "parameters";
  if (value.contains(key)) {
    Json arguments = value[key];
    if (arguments.is_string()) arguments = Json::parse(arguments.get<std::string>(), nullptr, false);
    if (!arguments.is_object()) throw Error("the arguments of '" + call.name + "' are not an object");
    call.arguments = std::move(arguments);
  }
  return call;
}

}  // namespace

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

std::vector<ToolCall> CallFormat::parse(const std::string& text) const {
  // Models sometimes drop their tags and write the bare JSON: accept that too.
  std::vector<std::string> blocks = block_tag.empty() ? std::vector<std::string>{} : tagged_blocks(text, block_tag);
  if (blocks.empty()) blocks.push_back(text);
  std::vector<ToolCall> calls;
  for (const std::string& block : blocks) {
    std::string body = strip_code_fence(block);
    Json value = Json::parse(body, nullptr, false);
    if (value.is_discarded()) throw Error("the call is not valid JSON");
    if (value.is_array()) {
      for (const Json& item : value) calls.push_back(to_call(item));
    } else {
      calls.push_back(to_call(value));
    }
  }
  if (calls.empty()) throw Error("the output holds an empty list of calls");
  return calls;
}

CallFormat CallFormat::by_name(const std::string& name) {
  if (name == "smollm2") return {"smollm2", "smollm2", "<tool_call>[", ", ", "]</tool_call>", "tool_call"};
  if (name == "hermes")
    return {"hermes", "hermes", "<tool_call>\n", "\n</tool_call>\n<tool_call>\n", "\n</tool_call>", "tool_call"};
  // Qwen2.5's calls as one JSON list in one block, laid out as the model writes a list.
  if (name == "hermes-list")
    return {"hermes-list", "hermes", "<tool_call>\n[\n    ", ",\n    ", "\n]\n</tool_call>", "tool_call"};
  if (name == "json") return {"json", "json", "[", ", ", "]", ""};
  throw Error("unknown call format '" + name + "' (known: smollm2, hermes, hermes-list, json)");
}

CallFormat CallFormat::as_list() const { return family == "hermes" ? by_name("hermes-list") : *this; }

CallFormat CallFormat::detect(const std::string& chat_template, bool has_tool_call_token) {
  if (chat_template.find("<tool_call>") != std::string::npos || has_tool_call_token)
    return by_name("hermes");
  if (chat_template.find("SmolLM") != std::string::npos) return by_name("smollm2");
  return by_name("json");
}

size_t json_value_end(const std::string& text, size_t begin) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = begin; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
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

std::string call_text(const ToolCall& call) {
  return "{\"name\": " + dump_json(Json(call.name)) + ", \"arguments\": " + dump_json(call.arguments) + "}";
}

}  // namespace sw
