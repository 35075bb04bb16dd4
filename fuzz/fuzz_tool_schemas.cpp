// Tool definitions in any dialect -> schemas -> grammars -> the matcher, on arbitrary input.
// The input is the tools' JSON text, then (after a NUL byte) a text the call grammar reads.
// Properties checked besides "no crash, no other exception than sw::Error": the canonical
// JSON of parsed tools parses again to the same tools, and every call the grammar accepts
// fits the schemas.
#include <cstdint>
#include <string>

#include "schemaweaver/tools.h"
#include "testing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const sw::Json tools_json = sw::Json::parse(input.substr(0, split), nullptr, false);
  if (tools_json.is_discarded()) return 0;
  std::vector<sw::ToolSpec> tools;
  try {
    tools = sw::parse_tools(tools_json);
  } catch (const sw::Error&) {
    return 0;
  }
  sw::Json canonical = sw::Json::array();
  for (const sw::ToolSpec& t : tools) canonical.push_back(t.to_openai());
  if (sw::parse_tools(canonical).size() != tools.size()) __builtin_trap();
  try {
    const sw::CallFormat format = sw::CallFormat::by_name("json");
    sw::Matcher matcher(sw::build_call_grammar(format, tools));
    const std::string text = split == std::string::npos ? "" : input.substr(split + 1);
    if (matcher.advance(text) && matcher.can_end()) {
      for (const sw::ToolCall& call : format.parse(text)) {
        if (!sw::schema_violation(tools, call).empty()) __builtin_trap();  // the grammar let a bad call through
      }
    }
  } catch (const sw::Error&) {
  }
  return 0;
}
