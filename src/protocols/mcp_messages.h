// What an MCP server sends, read into plain values: each function takes any JSON (a server may
// send anything) and throws Error for what it cannot use, never another exception. McpServer
// reads its messages through these; the fuzz target fuzz/fuzz_mcp_messages.cpp feeds them
// arbitrary lines.
#pragma once

#include <string>
#include <vector>

#include "schemaweaver/mcp.h"

namespace sw::mcp {

// One line of the stream as a JSON-RPC message (an object).
Json parse_line(const std::string& line);
// The text of a JSON-RPC error member.
std::string error_text(const Json& error);
// serverInfo.name of an initialize result ("" if it has none).
std::string server_name(const Json& initialize_result);

// One page of a tools/list result: its tool definitions and the cursor of the next page ("" if
// it is the last).
struct ToolsPage {
  std::vector<Json> tools;
  std::string next_cursor;
};
ToolsPage tools_page(const Json& result);

// A tools/call result: the text parts of its content joined (another part as "[type]"), or
// its structured content; whether the tool reported an error.
McpServer::Result tool_result(const Json& result);

}  // namespace sw::mcp
