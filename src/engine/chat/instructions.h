// The library's own instructions that show a model its tools, and its tool results, for models
// whose chat template does not (CallFormat::family "smollm2", "hermes" or "json").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "schemaweaver/tools.h"

namespace sw {

// The system message of `family` listing `tools`, with the caller's own system text
// (`user_system`, "" if none).
std::string library_instruction(const std::string& family, const std::vector<ToolSpec>& tools,
                                const std::string& user_system);

// A tool's result as `family` was trained to read it: the role of its message and its text.
std::pair<std::string, std::string> library_tool_result(const std::string& family, const std::string& content);
// Whether consecutive results share one message (their texts joined by a newline).
bool library_joins_tool_results(const std::string& family);

}  // namespace sw
