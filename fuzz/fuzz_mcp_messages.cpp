// What MCP servers send, line by line: JSON-RPC messages read into initialize, server/discover,
// tools/list and tools/call results (the listed tools parsed, their header arguments read), or
// sw::Error - never another exception.
#include <cstdint>
#include <sstream>
#include <string>

#include "testing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(lines, line);) {
    try {
      const sw::Json message = sw::mcp::parse_line(line);
      if (message.contains("error")) {
        sw::mcp::error_text(message["error"]);
        sw::mcp::error_code(message["error"]);
        sw::mcp::listed_versions(message["error"]);
      }
      if (!message.contains("result")) continue;
      const sw::Json& result = message["result"];
      sw::mcp::server_name(result);
      sw::mcp::listed_versions(result);
      sw::mcp::header_value(result);
      sw::mcp::tool_result(result);
      sw::mcp::ToolsPage page = sw::mcp::tools_page(result);
      for (const sw::Json& tool : page.tools) {
        sw::mcp::header_arguments(tool);
        sw::parse_tools(tool);
      }
    } catch (const sw::Error&) {
    }
  }
  return 0;
}
