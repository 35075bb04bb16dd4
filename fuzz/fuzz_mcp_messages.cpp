// What MCP servers send, line by line: JSON-RPC messages read into initialize, tools/list and
// tools/call results (and the listed tools parsed), or sw::Error - never another exception.
#include <cstdint>
#include <sstream>
#include <string>

#include "testing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(lines, line);) {
    try {
      const sw::Json message = sw::mcp::parse_line(line);
      if (message.contains("error")) sw::mcp::error_text(message["error"]);
      if (!message.contains("result")) continue;
      const sw::Json& result = message["result"];
      sw::mcp::server_name(result);
      sw::mcp::tool_result(result);
      sw::mcp::ToolsPage page = sw::mcp::tools_page(result);
      if (!page.tools.empty()) sw::parse_tools(sw::Json(page.tools));
    } catch (const sw::Error&) {
    }
  }
  return 0;
}
