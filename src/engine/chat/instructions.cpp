#include "engine/chat/instructions.h"

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

}  // namespace

std::string library_instruction(const std::string& family, const std::vector<ToolSpec>& tools,
                                const std::string& user_system) {
  if (family == "smollm2") return smollm2_prompt(tools, user_system);
  if (family == "hermes") return hermes_prompt(tools, user_system);
  return json_prompt(tools, user_system);
}

std::pair<std::string, std::string> library_tool_result(const std::string& family, const std::string& content) {
  // Qwen2.5's template hands results back in the user's turn, each in a <tool_response> block.
  if (family == "hermes") return {"user", "<tool_response>\n" + content + "\n</tool_response>"};
  return {"tool", content};
}

bool library_joins_tool_results(const std::string& family) { return family == "hermes"; }

}  // namespace sw
