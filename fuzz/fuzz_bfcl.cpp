// BFCL's forms: function docs (as tools), possible answers and the AST check of calls, on
// arbitrary JSON {"function": [...], "ground_truth": [...], "calls": [...]}: a case of BFCL's
// forms (check_forms, as load_cases checks them) gets a verdict; anything else an sw::Error.
#include <cstdint>
#include <string>

#include "bfcl/bfcl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const sw::Json input = sw::Json::parse(std::string(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (!input.is_object()) return 0;
  try {
    sw::bfcl::Case c;
    c.functions = input.value("function", sw::Json::array());
    c.ground_truth = input.value("ground_truth", sw::Json::array());
    sw::bfcl::check_forms(c);  // as load_cases does
    if (!c.functions.empty()) sw::parse_tools(c.functions);
    sw::bfcl::expected_calls(c.ground_truth);
    std::vector<sw::ToolCall> calls;
    const sw::Json listed = input.value("calls", sw::Json::array());
    for (const sw::Json& call : listed.is_array() ? listed : sw::Json::array()) {
      if (call.is_object() && call.contains("name") && call["name"].is_string() && call.contains("arguments"))
        calls.push_back({call["name"].get<std::string>(), call["arguments"]});
    }
    sw::bfcl::check(c, calls);
  } catch (const sw::Error&) {
  }
  return 0;
}
