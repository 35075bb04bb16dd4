// MCP over stdio and Streamable HTTP: the official time server from PyPI and an order desk on
// the official Python SDK (tests/scripts/mcp_test_server.py; real peers, each revision they
// speak), and servers that misbehave.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "schemaweaver/mcp.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;

const std::string kServerScript = std::string(SW_TEST_SCRIPTS) + "/mcp_test_server.py";

// A test server over HTTP, started with `args` and stopped at the end: its URL once it listens.
class HttpPeer {
 public:
  explicit HttpPeer(std::vector<std::string> args) {
    port_file_ = ::testing::TempDir() + "mcp_port_" + std::to_string(getpid()) + "_" + std::to_string(count_++);
    std::remove(port_file_.c_str());
    args.insert(args.begin(), {SW_PYTHON, kServerScript});
    args.insert(args.end(), {"--port-file", port_file_});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
    for (int i = 0; i < 400 && pid_ > 0; ++i) {  // 20 s to import the SDK and listen
      std::ifstream in(port_file_);
      std::string port;
      if (in >> port) {
        url_ = "http://127.0.0.1:" + port + "/mcp";
        return;
      }
      std::this_thread::sleep_for(50ms);
    }
  }
  ~HttpPeer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove(port_file_.c_str());
  }
  const std::string& url() const { return url_; }
  // The same server reached over https.
  std::string https_url() const { return url_.empty() ? "" : "https" + url_.substr(4); }

 private:
  static inline int count_ = 0;
  pid_t pid_ = -1;
  std::string port_file_;
  std::string url_;
};

sw::McpConnection over_http(const std::string& url, const std::string& revision = "") {
  sw::McpConnection connection;
  connection.url = url;
  connection.revision = revision;
  connection.timeout = 3000ms;
  return connection;
}

sw::McpConnection over_stdio(const std::string& revision = "") {
  sw::McpConnection connection;
  connection.command = {SW_PYTHON, kServerScript, "--transport", "stdio"};
  connection.revision = revision;
  connection.timeout = 20000ms;
  return connection;
}

const sw::ToolSpec* tool_named(const std::vector<sw::ToolSpec>& tools, const std::string& name) {
  for (const sw::ToolSpec& t : tools) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

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
  const std::vector<sw::ToolSpec> tools = time.tools();
  for (const sw::ToolSpec& t : tools) {
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
  EXPECT_THROW(sw::McpServer(std::vector<std::string>{}), sw::Error);
  EXPECT_THROW(sw::McpServer(sw::McpConnection{}), sw::Error);
}

// What the order desk offers, read the same over every transport and revision: the annotations,
// a structured result, a tool's error, a list that changes.
void check_order_desk(sw::McpServer& desk, const std::string& revision) {
  EXPECT_EQ(desk.name(), "order-desk");
  EXPECT_EQ(desk.protocol_version(), revision);
  std::vector<sw::ToolSpec> tools = desk.tools();
  ASSERT_NE(tool_named(tools, "lookup_order"), nullptr);
  EXPECT_TRUE(tool_named(tools, "lookup_order")->read_only);
  EXPECT_FALSE(tool_named(tools, "lookup_order")->destructive);
  ASSERT_NE(tool_named(tools, "cancel_order"), nullptr);
  EXPECT_TRUE(tool_named(tools, "cancel_order")->destructive);
  EXPECT_FALSE(tool_named(tools, "refund_order")->destructive);  // it says nothing

  sw::McpServer::Result order = desk.call({"lookup_order", sw::Json{{"order_id", "A7"}}});
  EXPECT_FALSE(order.is_error) << order.text;
  EXPECT_EQ(order.structured, (sw::Json{{"order_id", "A7"}, {"status", "shipped"}, {"items", 3}})) << order.text;
  sw::McpServer::Result refund = desk.call({"refund_order", sw::Json{{"order_id", "A7"}}});
  EXPECT_TRUE(refund.is_error);
  EXPECT_TRUE(contains(refund.text, "has not arrived")) << refund.text;

  // A tool the server adds (a name of its own each time) is there after the refresh.
  const std::string added = desk.call({"unlock_tools", sw::Json::object()}).text;
  EXPECT_EQ(tool_named(desk.tools(), added), nullptr) << added;
  EXPECT_TRUE(desk.refresh_tools());
  ASSERT_NE(tool_named(desk.tools(), added), nullptr) << added;
  EXPECT_TRUE(contains(desk.call({added, sw::Json{{"order_id", "A7"}}}).text, "created by alice"));
}

TEST(Mcp, TheSdksServerOverStdioInEveryRevision) {
  for (const std::string revision : {"2026-07-28", "2025-11-25", "2025-06-18"}) {
    SCOPED_TRACE(revision);
    sw::McpServer desk(over_stdio(revision));
    check_order_desk(desk, revision);
  }
  sw::McpServer newest(over_stdio());
  EXPECT_EQ(newest.protocol_version(), "2026-07-28");
}

// The error that connecting to `connection`, then calling its first tool, raises ("no error").
std::string call_error(sw::McpConnection connection) {
  try {
    sw::McpServer server(connection);
    server.call({server.tools().at(0).name, sw::Json::object()});
  } catch (const sw::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Mcp, AStdioServerThatExitsMidCallIsAnErrorNamingTheCall) {
  sw::McpConnection exits;
  exits.command = {SW_PYTHON, kServerScript, "--fault", "exit"};
  exits.timeout = 20000ms;
  const std::string exited = call_error(exits);
  EXPECT_TRUE(contains(exited, "failed on tools/call ping_desk: it closed its output (it exited)")) << exited;
}

#ifdef SW_MCP_HTTP
TEST(Mcp, TheSdksServerOverStreamableHttpInEveryRevision) {
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{}, {"--json-response"}, {"--stateless"}}) {
    HttpPeer peer([&] {
      std::vector<std::string> args{"--transport", "http"};
      args.insert(args.end(), flags.begin(), flags.end());
      return args;
    }());
    ASSERT_FALSE(peer.url().empty()) << "the SDK's server did not start";
    for (const std::string revision : {"2026-07-28", "2025-11-25", "2025-06-18"}) {
      SCOPED_TRACE(revision + (flags.empty() ? "" : " " + flags.front()));
      sw::McpServer desk(over_http(peer.url(), revision));
      check_order_desk(desk, revision);
    }
    std::vector<std::string> said;
    sw::McpConnection newest = over_http(peer.url());
    newest.log = [&](const std::string& line) { said.push_back(line); };
    sw::McpServer server(newest);
    EXPECT_EQ(server.protocol_version(), "2026-07-28");
    ASSERT_FALSE(said.empty());
    EXPECT_TRUE(contains(said.front(), "2026-07-28")) << said.front();
  }
}

// Over TLS: a certificate for 127.0.0.1 of the test's own making, trusted through SSL_CERT_FILE
// (OpenSSL's default paths, which the client reads); a server it does not trust is refused.
TEST(Mcp, TheSdksServerOverHttps) {
  const std::string dir = ::testing::TempDir() + "mcp_tls_" + std::to_string(getpid());
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  const std::string make = "mkdir -p " + dir + " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 " +
                           "-addext subjectAltName=IP:127.0.0.1 -keyout " + key + " -out " + cert + " 2>/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << "openssl could not make a certificate";
  HttpPeer peer({"--transport", "http", "--tls-cert", cert, "--tls-key", key});
  ASSERT_FALSE(peer.url().empty()) << "the SDK's server did not start";
  const char* before = std::getenv("SSL_CERT_FILE");
  const std::string untrusted = [&] {
    try {
      sw::McpServer desk(over_http(peer.https_url()));
    } catch (const sw::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }();
  EXPECT_TRUE(contains(untrusted, "cannot reach it")) << untrusted;
  setenv("SSL_CERT_FILE", cert.c_str(), 1);
  {
    sw::McpServer desk(over_http(peer.https_url()));
    EXPECT_EQ(desk.protocol_version(), "2026-07-28");
    EXPECT_EQ(desk.call({"lookup_order", sw::Json{{"order_id", "A7"}}}).structured["status"], "shipped");
  }
  if (before) setenv("SSL_CERT_FILE", before, 1);
  else unsetenv("SSL_CERT_FILE");
}

TEST(Mcp, HttpServersThatMisbehaveGiveClearErrorsWithinTheTimeout) {
  const std::vector<std::pair<std::string, std::string>> faults = {
      {"status500", "answered HTTP 500: internal error: the desk fell over"},
      {"garbage", "not the JSON-RPC response"},
      {"drop", "ended the event stream before answering"},
      {"hang", "did not answer within 3000 ms"},
      {"refuse", "answered HTTP 503"}};
  for (const auto& [fault, expected] : faults) {
    SCOPED_TRACE(fault);
    HttpPeer peer({"--fault", fault});
    ASSERT_FALSE(peer.url().empty());
    const auto started = std::chrono::steady_clock::now();
    const std::string error = call_error(over_http(peer.url()));
    EXPECT_TRUE(contains(error, expected)) << error;
    EXPECT_TRUE(contains(error, peer.url())) << error;  // names the server
    if (fault != "refuse") EXPECT_TRUE(contains(error, "tools/call ping_desk")) << error;  // and the call
    EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  }
  EXPECT_TRUE(contains(call_error(over_http("http://127.0.0.1:1/mcp")), "cannot reach it"));
  sw::McpConnection header = over_http("http://127.0.0.1:1/mcp");
  header.headers = {"no colon here"};
  EXPECT_TRUE(contains(call_error(header), "is not a header"));
  EXPECT_TRUE(contains(call_error(over_http("http://127.0.0.1:1/mcp", "2024-01-01")), "this client speaks"));
}

#else
// A library built without HTTP (the cross build) says so to an http:// server.
TEST(Mcp, WithoutHttpAnHttpServerIsAClearError) {
  EXPECT_TRUE(contains(call_error(over_http("http://127.0.0.1:1/mcp")), "has no HTTP"));
}
#endif

}  // namespace
