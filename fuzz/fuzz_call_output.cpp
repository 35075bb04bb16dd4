// The parsers of free model output, in every call format written here (the library's, LFM2's
// python-like calls, Gemma 4's notation): calls or sw::Error, nothing else;
// a parsed call of a tool name (sw::valid_tool_name), written in the format and parsed again,
// is the same call.
#include <algorithm>
#include <cstdint>
#include <string>

#include "testing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const sw::CallFormat& format :
       {sw::CallFormat::by_name("smollm2"), sw::CallFormat::by_name("hermes"), sw::CallFormat::by_name("json"),
        sw::CallFormat::python_like_calls(), sw::CallFormat::gemma4_calls()}) {
    std::vector<sw::ToolCall> calls;
    try {
      calls = format.parse(text);
    } catch (const sw::Error&) {
      continue;
    }
    const bool named = std::all_of(calls.begin(), calls.end(), [](const sw::ToolCall& c) { return sw::valid_tool_name(c.name); });
    if (!calls.empty() && named && format.parse(format.calls_text(calls)) != calls) __builtin_trap();
  }
  sw::json_value_end(text, text.find('{') == std::string::npos ? 0 : text.find('{'));
  return 0;
}
