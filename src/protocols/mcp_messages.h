// What an MCP server sends, read into plain values: each function takes any JSON (a server may
// send anything) and throws Error for what it cannot use, never another exception. McpServer
// reads its messages through these; the fuzz target fuzz/fuzz_mcp_messages.cpp feeds them
// arbitrary lines.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "schemaweaver/mcp.h"

namespace sw::mcp {

// One line of the stream (or one event's data) as a JSON-RPC message (an object).
Json parse_line(const std::string& line);
// The text of a JSON-RPC error member, and its code (0 if it has none).
std::string error_text(const Json& error);
long error_code(const Json& error);
// The server's name: serverInfo.name of an initialize result, or the serverInfo in the _meta of
// a result of the current revision ("" if it has neither).
std::string server_name(const Json& result);
// The revisions a server lists: a server/discover result's supportedVersions, or the supported
// list in the data of an unsupported-version error.
std::vector<std::string> listed_versions(const Json& result_or_error);

// One page of a tools/list result: its tool definitions, the cursor of the next page ("" if it
// is the last) and how long the list holds (ttlMs; -1 if it does not say).
struct ToolsPage {
  std::vector<Json> tools;
  std::string next_cursor;
  long long ttl_ms = -1;
};
ToolsPage tools_page(const Json& result);

// The arguments a tool asks to be sent as HTTP headers too (x-mcp-header in its inputSchema's
// properties): each argument and its header's name ("Mcp-Param-" and the name given). Throws
// Error for a name that is not a header's, or an argument that is not a string, number or boolean.
std::vector<std::pair<std::string, std::string>> header_arguments(const Json& tool);
// A value as a header carries it: plain where it is printable ASCII without spaces at its ends,
// else "=?base64?...?=".
std::string header_value(const Json& value);

// A tools/call result: the text parts of its content joined (another part as "[type]"), or
// its structured content; whether the tool reported an error. Throws Error for a result that
// asks for input (resultType "input_required"), which an agent cannot give.
McpServer::Result tool_result(const Json& result);

}  // namespace sw::mcp
