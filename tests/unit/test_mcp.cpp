// MCP over stdio: the official time server from PyPI (a real peer) and servers that misbehave.
#include <gtest/gtest.h>

#include "schemaweaver/mcp.h"

namespace {

using namespace std::chrono_literals;

// The message of the Error that starting `command` raises, or "no error".
std::string start_error(std::vector<std::string> command) {
  try {
    sw::McpServer server(std::move(command), 3000ms);
  } catch (const sw::Error& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Mcp, TimeServerListsAndRunsItsTools) {
  sw::McpServer time({SW_MCP_TIME, "--local-timezone", "UTC"});
  EXPECT_EQ(time.name(), "mcp-time");
  const sw::ToolSpec* current = nullptr;
  for (const sw::ToolSpec& t : time.tools()) {
    if (t.name == "get_current_time") current = &t;
  }
  ASSERT_NE(current, nullptr);
  EXPECT_TRUE(current->read_only);  // annotations.readOnlyHint
  ASSERT_NE(current->find_argument("timezone"), nullptr);
  EXPECT_TRUE(current->find_argument("timezone")->required);

  sw::McpServer::Result tokyo = time.call({"get_current_time", sw::Json{{"timezone", "Asia/Tokyo"}}});
  EXPECT_FALSE(tokyo.is_error);
  EXPECT_TRUE(contains(tokyo.text, "+09:00")) << tokyo.text;
  sw::McpServer::Result mars = time.call({"get_current_time", sw::Json{{"timezone", "Mars/Base"}}});
  EXPECT_TRUE(mars.is_error) << mars.text;
}

TEST(Mcp, ServersThatMisbehaveGiveClearErrors) {
  EXPECT_TRUE(contains(start_error({"/nonexistent/mcp-server"}), "cannot start")) << start_error({"/nonexistent/mcp-server"});
  EXPECT_TRUE(contains(start_error({"false"}), "exited")) << start_error({"false"});
  EXPECT_TRUE(contains(start_error({"sh", "-c", "echo not-json; sleep 5"}), "not JSON-RPC"));
  EXPECT_TRUE(contains(start_error({"sleep", "10"}), "did not answer within"));
  // cat sends our requests back: a request from the "server" is refused, then our own refusal
  // arrives as the answer to initialize.
  EXPECT_TRUE(contains(start_error({"cat"}), "initialize failed")) << start_error({"cat"});
  EXPECT_THROW(sw::McpServer({}), sw::Error);
}

}  // namespace
