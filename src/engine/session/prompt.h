// The prompt of a call: the conversation as the model's own chat template renders it (through
// llama.cpp's Jinja engine), with the tools where the template shows them, else with this
// library's instruction; and how much of it stays the same while the tools do (the prompt
// cache's prefix).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "schemaweaver/engine.h"

namespace sw {

// What a prompt shows of the tools: their list, for a model whose own template shows them, and
// `message(user_system)`, the system message of this library's instruction that shows them to
// a model whose template does not (null: no tools).
using ToolsMessage = std::function<std::string(const std::string& user_system)>;
struct ShownTools {
  const std::vector<ToolSpec>* tools = nullptr;
  ToolsMessage message;
  std::string tool_choice = "auto";
  bool thinking = false;  // the template's thinking on (enable_thinking)
  std::map<std::string, std::string> template_variables;  // the caller's others (template_variables)
};

// What a call's prompt shows: the tools (see ShownTools) and the call's choices.
ShownTools shown_tools(const LoadedModel& model, const std::vector<ToolSpec>& tools, ToolsMessage message,
                       const CallOptions& options);

// The conversation as the model's chat template renders it: with the tools, tool results and
// earlier calls as the template shows them where the template gives the call format; else with
// the library's instruction.
std::string render(const LoadedModel& model, const std::vector<Message>& messages, const ShownTools& shown);

// How many of the prompt's tokens stay the same while the tools and the caller's system
// message do.
size_t tool_prefix_length(const LoadedModel& model, const std::vector<Message>& messages, const ShownTools& shown,
                          const std::vector<llama_token>& prompt);

}  // namespace sw
