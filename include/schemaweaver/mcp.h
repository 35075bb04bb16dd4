// schemaweaver/mcp.h - tools from Model Context Protocol servers, and the agent loop that lets
// a model use them.
//
//   sw::McpServer time({"mcp-server-time"});            // started over stdio, initialized
//   sw::AgentResult r = sw::run_agent(session, {&time}, {{"user", "Time in Tokyo?"}}, {});
//   print(r.answer);                                      // r.steps: each call and its result
//
// A tool an MCP server marks read-only (annotations.readOnlyHint) is executed as soon as a
// provisional call to it is emitted; if the final call differs, its result is discarded and
// the tool runs again with the final call. Any other tool runs once, with the final call only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "schemaweaver/engine.h"

namespace sw {

// One MCP server over stdio: JSON-RPC 2.0, one message per line. Thread-safe.
class McpServer {
 public:
  // Starts `command` (the program and its arguments, looked up on PATH), runs initialize and
  // tools/list. Throws Error if it cannot start, exits, answers garbage or takes longer than
  // `timeout` for a reply.
  explicit McpServer(std::vector<std::string> command,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~McpServer();  // closes its stdin and waits for it (killed after a grace period)
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  const std::string& name() const { return name_; }  // serverInfo.name
  const std::vector<ToolSpec>& tools() const { return tools_; }

  struct Result {
    std::string text;  // the text parts of the result's content, joined
    bool is_error = false;
  };
  // tools/call. Throws Error if the server fails (not if the tool reports an error).
  Result call(const ToolCall& call);

 private:
  Json request(const std::string& method, Json params);
  void send(const Json& message);
  Json read_message();
  void stop();  // closes the pipes and reaps the process

  std::vector<std::string> command_;
  std::chrono::milliseconds timeout_;
  int pid_ = -1;
  int to_server_ = -1, from_server_ = -1;
  std::string buffer_;  // bytes read but not yet a whole line
  long next_id_ = 1;
  std::mutex mutex_;
  std::string name_;
  std::vector<ToolSpec> tools_;
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
};

// One call the agent made and what came back.
struct AgentStep {
  int round = 0;
  ToolCall call;
  std::string server;
  McpServer::Result result;
  bool executed_early = false;  // from the provisional call, kept because the final one equals it
  bool rerun = false;           // a provisional result was discarded and the tool ran again
};

struct AgentResult {
  std::string answer;                 // the model's reply in text ("" if the rounds ran out)
  std::vector<AgentStep> steps;
  std::vector<Message> conversation;  // everything, the tool calls and results included
  int rounds = 0;
};

// Runs the conversation until the model replies in text or max_rounds pass: each turn's calls
// are executed on the server that offers the tool, their results added as tool messages.
// `on_step` (if set) sees each executed call. Throws Error when a server fails.
AgentResult run_agent(Session& session, const std::vector<McpServer*>& servers, std::vector<Message> messages,
                      const AgentOptions& options, const std::function<void(const AgentStep&)>& on_step = nullptr);

}  // namespace sw
