// MCP over stdio (JSON-RPC 2.0, one message per line) and the agent loop on top of it.
#include "schemaweaver/mcp.h"

#include "protocols/mcp_messages.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>

extern char** environ;

namespace sw {
namespace {

constexpr const char* kProtocolVersion = "2025-06-18";

// Writes all of `data`; a reader that went away is an Error, not a SIGPIPE that ends the
// process (the signal is blocked on this thread while writing, and a pending one consumed).
void write_all(int fd, const std::string& data) {
  sigset_t pipe_signal, previous;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  size_t done = 0;
  int error = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      break;
    }
    done += size_t(n);
  }
  if (error == EPIPE) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_signal, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error) throw Error(std::string("cannot write to the MCP server (it exited?): ") + std::strerror(error));
}

std::string describe(const std::vector<std::string>& command) {
  std::string text;
  for (const std::string& part : command) text += (text.empty() ? "" : " ") + part;
  return "'" + text + "'";
}

}  // namespace

namespace mcp {

Json parse_line(const std::string& line) {
  Json message = Json::parse(line, nullptr, false);
  if (message.is_discarded() || !message.is_object())
    throw Error("the MCP server wrote something that is not JSON-RPC: " + line.substr(0, 200));
  return message;
}

std::string error_text(const Json& error) {
  if (error.is_object() && error.contains("message") && error["message"].is_string())
    return error["message"].get<std::string>();
  return error.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string server_name(const Json& initialize_result) {
  if (!initialize_result.is_object() || !initialize_result.contains("serverInfo")) return "";
  const Json& info = initialize_result["serverInfo"];
  return info.is_object() && info.contains("name") && info["name"].is_string() ? info["name"].get<std::string>() : "";
}

ToolsPage tools_page(const Json& result) {
  if (!result.is_object() || !result.contains("tools") || !result["tools"].is_array())
    throw Error("answered tools/list without a tool list");
  ToolsPage page;
  page.tools.assign(result["tools"].begin(), result["tools"].end());
  if (result.contains("nextCursor") && result["nextCursor"].is_string())
    page.next_cursor = result["nextCursor"].get<std::string>();
  return page;
}

McpServer::Result tool_result(const Json& result) {
  if (!result.is_object()) throw Error("answered tools/call with a result that is not an object");
  McpServer::Result out;
  out.is_error = result.contains("isError") && result["isError"] == true;
  if (result.contains("content") && result["content"].is_array()) {
    for (const Json& part : result["content"]) {
      auto field = [&](const char* key) {
        return part.is_object() && part.contains(key) && part[key].is_string() ? part[key].get<std::string>() : "";
      };
      std::string text = field("type") == "text" ? field("text") : "[" + (field("type").empty() ? "?" : field("type")) + "]";
      out.text += (out.text.empty() ? "" : "\n") + text;
    }
  }
  if (out.text.empty() && result.contains("structuredContent"))
    out.text = result["structuredContent"].dump(-1, ' ', false, Json::error_handler_t::replace);
  return out;
}

}  // namespace mcp

McpServer::McpServer(std::vector<std::string> command, std::chrono::milliseconds timeout)
    : command_(std::move(command)), timeout_(timeout) {
  if (command_.empty()) throw Error("an MCP server needs a command");
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) throw Error("cannot create a pipe: " + std::string(std::strerror(errno)));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    throw Error("cannot create a pipe: " + std::string(std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  std::vector<char*> argv;
  for (std::string& part : command_) argv.push_back(part.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  to_server_ = in[1];
  from_server_ = out[0];
  if (rc != 0) {
    close(to_server_);
    close(from_server_);
    throw Error("cannot start the MCP server " + describe(command_) + ": " + std::strerror(rc));
  }
  pid_ = pid;
  try {
    Json init = request("initialize", {{"protocolVersion", kProtocolVersion},
                                       {"capabilities", Json::object()},
                                       {"clientInfo", {{"name", "schemaweaver"}, {"version", "0.1.0"}}}});
    name_ = mcp::server_name(init);
    if (name_.empty()) name_ = command_.front();
    send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    Json listed = Json::array();
    Json params = Json::object();
    while (true) {  // tools/list is paginated
      mcp::ToolsPage page = mcp::tools_page(request("tools/list", params));
      for (Json& t : page.tools) listed.push_back(std::move(t));
      if (page.next_cursor.empty()) break;
      params = {{"cursor", page.next_cursor}};
    }
    if (!listed.empty()) tools_ = parse_tools(listed);
  } catch (const Error& e) {
    stop();
    throw Error(std::string(e.what()).find("MCP server") != std::string::npos
                    ? e.what()
                    : "the MCP server " + describe(command_) + ": " + e.what());
  }
}

McpServer::~McpServer() { stop(); }

void McpServer::stop() {
  if (to_server_ >= 0) close(to_server_);  // end of input: the server's cue to exit
  if (from_server_ >= 0) close(from_server_);
  to_server_ = from_server_ = -1;
  if (pid_ <= 0) return;
  for (int i = 0; i < 40; ++i) {  // two seconds' grace
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    usleep(50000);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void McpServer::send(const Json& message) { write_all(to_server_, message.dump() + "\n"); }

Json McpServer::read_message() {
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    size_t end = buffer_.find('\n');
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      return mcp::parse_line(line);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw Error("the MCP server did not answer within " + std::to_string(timeout_.count()) + " ms");
    pollfd p{from_server_, POLLIN, 0};
    int ready = poll(&p, 1, int(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[65536];
    ssize_t n = ::read(from_server_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("the MCP server closed its output (it exited)");
    buffer_.append(chunk, size_t(n));
  }
}

Json McpServer::request(const std::string& method, Json params) {
  long id = next_id_++;
  send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  while (true) {
    Json message = read_message();
    if (message.contains("method")) {
      // A request of the server's own (ping, say) gets an answer; notifications need none.
      if (message.contains("id")) {
        Json reply = {{"jsonrpc", "2.0"}, {"id", message["id"]}};
        if (message["method"] == "ping") reply["result"] = Json::object();
        else reply["error"] = {{"code", -32601}, {"message", "method not supported by this client"}};
        send(reply);
      }
      continue;
    }
    if (!message.contains("id") || message["id"] != id) continue;  // an answer to nothing we wait for
    if (message.contains("error")) throw Error(method + " failed: " + mcp::error_text(message["error"]));
    if (!message.contains("result")) throw Error("the MCP server answered " + method + " without a result");
    return message["result"];
  }
}

McpServer::Result McpServer::call(const ToolCall& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  return mcp::tool_result(request("tools/call", {{"name", call.name}, {"arguments", call.arguments}}));
}

namespace {

// The id of the agent's i-th call of a round, shown with the call and its result where the
// template shows ids: nine letters and digits, as Mistral's templates require.
std::string agent_call_id(int round, size_t i) {
  char id[16];
  std::snprintf(id, sizeof id, "call%02d%03zu", round % 100, i % 1000);
  return id;
}

}  // namespace

AgentResult run_agent(Session& session, const std::vector<McpServer*>& servers, std::vector<Message> messages,
                      const AgentOptions& options, const std::function<void(const AgentStep&)>& on_step) {
  if (options.max_rounds < 1) throw Error("max_rounds must be at least 1");
  std::vector<ToolSpec> tools;
  std::map<std::string, McpServer*> owner;
  for (McpServer* server : servers) {
    for (const ToolSpec& t : server->tools()) {
      if (owner.count(t.name)) throw Error("two MCP servers offer a tool named '" + t.name + "'");
      owner[t.name] = server;
      bool shown = options.tools.empty() ||
                   std::find(options.tools.begin(), options.tools.end(), t.name) != options.tools.end();
      if (shown) tools.push_back(t);
    }
  }
  for (const std::string& name : options.tools) {
    if (!owner.count(name)) throw Error("no MCP server offers a tool named '" + name + "'");
  }
  if (tools.empty()) throw Error("the MCP servers offer no tools");

  AgentResult out;
  for (int round = 1; round <= options.max_rounds && out.answer.empty(); ++round) {
    out.rounds = round;
    // Read-only tools start on their provisional calls, while the model decides the rest.
    std::map<int, std::pair<ToolCall, std::future<McpServer::Result>>> early;
    CallOptions call = options.call;
    call.tool_choice = round == 1 && options.first_turn_calls ? ToolChoice::Required : ToolChoice::Auto;
    call.on_call = [&](const CallEvent& e) {
      if (options.call.on_call) options.call.on_call(e);
      if (e.kind != CallEvent::Kind::Provisional) return;
      McpServer* server = owner.at(e.call.name);
      early[e.index] = {e.call, std::async(std::launch::async, [server, c = e.call] { return server->call(c); })};
    };
    CallResult r = session.call(messages, tools, call);
    if (r.text_reply) {
      out.answer = r.text;
      Message reply{"assistant", r.text};
      reply.reasoning_content = r.reasoning;
      messages.push_back(reply);
      break;
    }
    if (!r.error.empty()) throw Error("the model's call is not valid: " + r.error);
    Message turn{"assistant", ""};
    turn.tool_calls = r.calls;
    for (size_t i = 0; i < r.calls.size(); ++i) turn.tool_calls[i].id = agent_call_id(round, i);
    turn.reasoning_content = r.reasoning;
    messages.push_back(turn);
    for (size_t i = 0; i < r.calls.size(); ++i) {
      AgentStep step;
      step.round = round;
      step.call = r.calls[i];
      McpServer* server = owner.at(step.call.name);
      step.server = server->name();
      auto provisional = early.find(int(i));
      if (provisional != early.end()) {
        McpServer::Result kept = provisional->second.second.get();
        step.executed_early = provisional->second.first == step.call;
        step.rerun = !step.executed_early;
        step.result = step.executed_early ? kept : server->call(step.call);
      } else {
        step.result = server->call(step.call);
      }
      Message result{"tool", step.result.text};
      result.tool_call_id = agent_call_id(round, i);
      messages.push_back(result);
      if (on_step) on_step(step);
      out.steps.push_back(std::move(step));
    }
  }
  out.conversation = std::move(messages);
  return out;
}

}  // namespace sw
