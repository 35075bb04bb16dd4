#include "engine/format/format.h"

#include "engine/chat/instructions.h"

namespace sw {

std::string CallFormat::system_prompt(const std::vector<ToolSpec>& tools,
                                      const std::string& user_system) const {
  return library_instruction(family, tools, user_system);
}

std::string CallFormat::call_text(const ToolCall& call) const {
  const std::string id = id_prefix.empty() ? "" : id_prefix + "\"" + std::string(size_t(id_length), '0') + "\"";
  return call_head(call.name) + arguments.members_text(call.arguments) + id + call_suffix;
}

std::string CallFormat::calls_text(const std::vector<ToolCall>& calls) const {
  std::string text = opener;
  for (size_t i = 0; i < calls.size(); ++i) text += (i ? separator : "") + call_text(calls[i]);
  return text + closer;
}

std::pair<std::string, std::string> CallFormat::tool_result(const std::string& content) const {
  return library_tool_result(family, content);
}

bool CallFormat::joins_tool_results() const { return library_joins_tool_results(family); }

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

}  // namespace sw
