// schemaweaver/mcp.h - tools from Model Context Protocol servers, and the agent loop that lets
// a model use them.
//
//   sw::McpServer time({"mcp-server-time"});                       // over stdio
//   sw::McpServer shop(sw::mcp_connection("http://127.0.0.1:8000/mcp"));  // Streamable HTTP
//   sw::AgentResult r = sw::run_agent(session, {&time, &shop}, {{"user", "Time in Tokyo?"}}, {});
//   print(r.answer);                                                // r.steps: each call and its result
//
// Revisions: the client offers the current one, 2026-07-28 (stateless: each request carries its
// version and capabilities in _meta; server/discover), and falls back to the handshake of
// 2025-11-25 or 2025-06-18 (initialize, a session id over HTTP) where the server speaks only
// those; protocol_version() says which was agreed.
//
// A tool an MCP server marks read-only (annotations.readOnlyHint) is executed as soon as a
// provisional call to it is emitted; if the final call differs, its result is discarded and
// the tool runs again with the final call. Any other tool runs once, with the final call only;
// one marked destructive (annotations.destructiveHint) only once AgentOptions::confirm allows it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "schemaweaver/engine.h"

namespace sw {

namespace mcp {
class Transport;
}

// Where an MCP server is and how to talk to it.
struct McpConnection {
  std::vector<std::string> command;  // stdio: the program (looked up on PATH) and its arguments
  std::string url;                   // or Streamable HTTP: an http:// or https:// endpoint
  std::vector<std::string> headers;  // HTTP: "Name: value" sent with every request (a bearer token)
  // The longest wait for a reply (a server that hangs is an Error after it).
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  // The revision to offer ("" offers the current one and falls back; else only that one:
  // "2026-07-28", "2025-11-25" or "2025-06-18").
  std::string revision;
  // Told what was agreed and what was skipped (a verbose log), if set.
  std::function<void(const std::string&)> log;
};

// "http://..." or "https://..." is Streamable HTTP; anything else a command line split at
// spaces (no shell quoting). Throws Error for an empty one.
McpConnection mcp_connection(const std::string& where);

// One MCP server. Thread-safe.
class McpServer {
 public:
  // Connects (a stdio server is started), agrees on a revision and lists the tools. Throws Error,
  // naming the server, if it cannot start or be reached, exits, answers garbage or an HTTP error,
  // speaks no revision of ours or takes longer than the timeout for a reply. A tool whose schema
  // cannot be read is left out (said to `log`), the server's other tools kept.
  explicit McpServer(McpConnection connection);
  explicit McpServer(std::vector<std::string> command,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~McpServer();  // ends an HTTP session; closes a stdio server's stdin and waits for it
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  const std::string& name() const { return name_; }  // serverInfo.name
  const std::string& protocol_version() const { return revision_; }
  // The command line or the URL.
  const std::string& where() const { return where_; }
  std::vector<ToolSpec> tools() const;
  // Lists the tools again where the server said they changed (notifications/tools/list_changed),
  // the list it gave has expired (its ttlMs), or the server is reached over an HTTP session
  // (whose change notifications this client does not listen for); returns whether it did.
  bool refresh_tools();

  struct Result {
    std::string text;       // the text parts of the result's content, joined (else its structured content)
    bool is_error = false;  // isError, or structured content that does not fit the tool's outputSchema
    Json structured;        // structuredContent (null if none)
  };
  // tools/call. Throws Error naming the server and the tool if the server fails (not if the tool
  // reports an error).
  Result call(const ToolCall& call);

 private:
  struct ToolExtras {
    std::shared_ptr<const ToolSpec> output;                        // its outputSchema as a tool's (null if none)
    std::vector<std::pair<std::string, std::string>> header_args;  // x-mcp-header: argument, header
  };
  void connect();
  bool discover();  // the current revision; false where the server speaks only older ones
  void initialize(const std::string& offered);
  void list_tools();
  Json request(const std::string& method, Json params,
               std::vector<std::pair<std::string, std::string>> headers = {});
  void on_server_message(const Json& message);
  bool modern() const;
  void log(const std::string& line) const;

  McpConnection connection_;
  std::string where_;
  std::unique_ptr<mcp::Transport> transport_;
  long next_id_ = 1;
  mutable std::mutex mutex_;
  std::string name_;
  std::string revision_;
  std::vector<ToolSpec> tools_;
  std::map<std::string, ToolExtras> extras_;
  bool tools_changed_ = false;
  bool relist_each_turn_ = false;  // an HTTP session
  std::chrono::steady_clock::time_point tools_expire_ = std::chrono::steady_clock::time_point::max();
};

struct AgentOptions {
  CallOptions call;     // the decoding of each turn (tool_choice Auto, but see below)
  int max_rounds = 6;   // model turns at most
  // The first turn must be a call (for a request known to need a tool; a small model may
  // otherwise answer at once).
  bool first_turn_calls = false;
  // Only these of the servers' tools are shown to the model (all if empty); run_agent throws
  // Error for a name no server offers.
  std::vector<std::string> tools;
  // Asked before a tool marked destructive runs (the call, the server's name); a call it does
  // not allow is not run, and the model is told so in the tool's result. Unset: none runs.
  std::function<bool(const ToolCall&, const std::string&)> confirm;
};

// One call the agent made and what came back.
struct AgentStep {
  int round = 0;
  ToolCall call;
  std::string server;
  McpServer::Result result;
  bool executed_early = false;  // from the provisional call, kept because the final one equals it
  bool rerun = false;           // a provisional result was discarded and the tool ran again
  bool declined = false;        // a destructive tool's call that AgentOptions::confirm did not allow
  double call_ms = 0;           // the call's round trip to its server (the tool's own run included)
};

struct AgentResult {
  std::string answer;                 // the model's reply in text (it may be empty)
  bool answered = false;              // the model replied in text (else the rounds ran out, or error)
  std::string error;                  // why the turn ended without one where the model's call was not valid
  std::vector<AgentStep> steps;
  std::vector<Message> conversation;  // everything, the tool calls and results included
  int rounds = 0;
};

// Runs the conversation until the model replies in text or max_rounds pass: each turn's calls
// are executed on the server that offers the tool, their results added as tool messages.
// `on_step` (if set) sees each call. Before each turn a server's changed tools are listed again.
// A tool's error (isError) reaches the model as its result, marked an error; a call the model
// writes that is not valid (cut at max_tokens, say) ends the turn (AgentResult::error). Throws
// Error naming the server and the call when a server fails.
AgentResult run_agent(Session& session, const std::vector<McpServer*>& servers, std::vector<Message> messages,
                      const AgentOptions& options, const std::function<void(const AgentStep&)>& on_step = nullptr);

}  // namespace sw
