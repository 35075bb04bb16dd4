// Schema patterns: the linear-time automaton and the string grammar built from it, on arbitrary
// patterns and texts. The input is the pattern, a NUL byte, then the text. Checked: the
// grammar never accepts the JSON text of a string the pattern does not match.
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
    const bool matches = sw::Pattern(source).search(text);
    const sw::Json quoted = sw::Json(text);
    std::vector<sw::ToolSpec> tools = sw::parse_tools(sw::Json::parse(
        R"([{"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}}])"));
    tools[0].arguments[0].schema.checks["pattern"] = source;
    sw::Matcher matcher(sw::build_value_grammar(tools[0].arguments[0].schema));
    const std::string json = sw::dump_json(quoted);
    if (matcher.advance(json) && matcher.can_end() && !matches) __builtin_trap();
  } catch (const sw::Error&) {
  } catch (const nlohmann::json::type_error&) {  // text not UTF-8: no JSON string to read
  }
  return 0;
}
