// Schema patterns: the linear-time automaton and the string grammar built from it, on arbitrary
// patterns and texts. The input is the pattern, a NUL byte, then the text. Checked: a JSON
// string the grammar accepts decodes to a string the pattern matches.
#include <cstdint>
#include <string>

#include "schemaweaver/tools.h"
#include "testing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  if (split == std::string::npos) return 0;
  const std::string source = input.substr(0, split), text = input.substr(split + 1);
  try {
    const sw::Pattern pattern(source);
    pattern.search(text);
    std::vector<sw::ToolSpec> tools = sw::parse_tools(sw::Json::parse(
        R"([{"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}}])"));
    tools[0].arguments[0].schema.checks["pattern"] = source;
    sw::Matcher matcher(sw::build_value_grammar(tools[0].arguments[0].schema));
    // The text as a JSON string (invalid UTF-8 replaced), as a model would write it.
    const std::string json = sw::Json(text).dump(-1, ' ', false, sw::Json::error_handler_t::replace);
    if (matcher.advance(json) && matcher.can_end() && !pattern.search(sw::Json::parse(json).get<std::string>()))
      __builtin_trap();
  } catch (const sw::Error&) {
  }
  return 0;
}
