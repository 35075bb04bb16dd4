// How a model family writes tool calls: the text around the calls, the tool instructions it
// was trained to see, and parsing of free output back into calls.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "schemaweaver/tools.h"

namespace sw {

struct CallFormat {
  std::string name;       // "smollm2", "hermes", "json", ...
  std::string family;     // whose instructions and tool results: "smollm2", "hermes" or "json"
  std::string opener;     // before the first call
  std::string separator;  // between two calls
  std::string closer;     // after the last call
  std::string block_tag;  // calls sit inside <tag>...</tag> blocks ("" for bare JSON)

  // The system message that lists the tools, as the model was trained to read them.
  // `user_system` is the caller's own system message ("" if none).
  std::string system_prompt(const std::vector<ToolSpec>& tools, const std::string& user_system) const;

  // The text of a turn that made these calls, as the model writes it.
  std::string calls_text(const std::vector<ToolCall>& calls) const;
  // A tool's result as the model was trained to read it: the role of its message and its text.
  std::pair<std::string, std::string> tool_result(const std::string& content) const;
  // Whether consecutive results share one message (their texts joined by a newline).
  bool joins_tool_results() const { return family == "hermes"; }

  // Parses a model's free output. Throws Error with a short reason when it holds no call.
  std::vector<ToolCall> parse(const std::string& text) const;

  // The format whose turn is one JSON list of calls: itself where it already is one (smollm2,
  // json), else the list in the format's block ("hermes-list").
  CallFormat as_list() const;

  static CallFormat by_name(const std::string& name);  // throws Error on an unknown name
  // Chooses from the model's chat template and whether "<tool_call>" is a single token.
  static CallFormat detect(const std::string& chat_template, bool has_tool_call_token);
};

// One past the closing bracket of the JSON object or array that opens at `begin` in `text`
// (strings and their escapes skipped); npos if the text ends first.
size_t json_value_end(const std::string& text, size_t begin);

// The JSON text of one call: {"name": "...", "arguments": {...}}.
std::string call_text(const ToolCall& call);

}  // namespace sw
