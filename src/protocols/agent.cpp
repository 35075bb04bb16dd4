// The agent loop: the model's turns, their calls executed on the MCP servers that offer the tools.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <tuple>

#include "schemaweaver/mcp.h"

namespace sw {
namespace {

// The id of the agent's i-th call of a round, shown with the call and its result where the
// template shows ids: nine letters and digits, as Mistral's templates require.
std::string agent_call_id(int round, size_t i) {
  char id[16];
  std::snprintf(id, sizeof id, "call%02d%03zu", round % 100, i % 1000);
  return id;
}

// The tools the model is shown, and the server of every tool offered.
struct Toolbox {
  std::vector<ToolSpec> shown;
  std::map<std::string, McpServer*> owner;
  std::map<std::string, ToolSpec> by_name;
};

Toolbox gather_tools(const std::vector<McpServer*>& servers, const std::vector<std::string>& only) {
  Toolbox box;
  for (McpServer* server : servers) {
    for (const ToolSpec& t : server->tools()) {
      if (box.owner.count(t.name)) throw Error("two MCP servers offer a tool named '" + t.name + "'");
      box.owner[t.name] = server;
      box.by_name[t.name] = t;
      if (only.empty() || std::find(only.begin(), only.end(), t.name) != only.end()) box.shown.push_back(t);
    }
  }
  for (const std::string& name : only) {
    if (!box.owner.count(name)) throw Error("no MCP server offers a tool named '" + name + "'");
  }
  if (box.shown.empty()) throw Error("the MCP servers offer no tools");
  return box;
}

// `server`'s result for `call`, and the time it took.
std::pair<McpServer::Result, double> timed_call(McpServer* server, const ToolCall& call) {
  const auto started = std::chrono::steady_clock::now();
  McpServer::Result result = server->call(call);
  return {result, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count()};
}

// What the model reads back as the tool's result: an error said to be one.
std::string result_message(const McpServer::Result& result) {
  if (!result.is_error) return result.text;
  std::string lower = result.text.substr(0, 5);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return lower == "error" ? result.text : "Error: " + result.text;
}

}  // namespace

AgentResult run_agent(Session& session, const std::vector<McpServer*>& servers, std::vector<Message> messages,
                      const AgentOptions& options, const std::function<void(const AgentStep&)>& on_step) {
  if (options.max_rounds < 1) throw Error("max_rounds must be at least 1");
  Toolbox box = gather_tools(servers, options.tools);
  AgentResult out;
  for (int round = 1; round <= options.max_rounds && !out.answered; ++round) {
    out.rounds = round;
    bool changed = false;
    for (McpServer* server : servers) changed = server->refresh_tools() || changed;
    if (changed) box = gather_tools(servers, options.tools);
    // Read-only tools start on their provisional calls, while the model decides the rest.
    std::map<int, std::pair<ToolCall, std::future<std::pair<McpServer::Result, double>>>> early;
    CallOptions call = options.call;
    call.tool_choice = round == 1 && options.first_turn_calls ? ToolChoice::Required : ToolChoice::Auto;
    call.on_call = [&](const CallEvent& e) {
      if (options.call.on_call) options.call.on_call(e);
      if (e.kind != CallEvent::Kind::Provisional) return;
      McpServer* server = box.owner.at(e.call.name);
      early[e.index] = {e.call, std::async(std::launch::async, [server, c = e.call] { return timed_call(server, c); })};
    };
    CallResult r = session.call(messages, box.shown, call);
    if (r.text_reply) {
      out.answer = r.text;
      out.answered = true;
      Message reply{"assistant", r.text};
      reply.reasoning_content = r.reasoning;
      messages.push_back(reply);
      break;
    }
    if (!r.error.empty()) {
      out.error = "the model's call is not valid: " + r.error;
      break;
    }
    Message turn{"assistant", ""};
    turn.tool_calls = r.calls;
    for (size_t i = 0; i < r.calls.size(); ++i) turn.tool_calls[i].id = agent_call_id(round, i);
    turn.reasoning_content = r.reasoning;
    messages.push_back(turn);
    for (size_t i = 0; i < r.calls.size(); ++i) {
      AgentStep step;
      step.round = round;
      step.call = r.calls[i];
      McpServer* server = box.owner.at(step.call.name);
      step.server = server->name();
      auto provisional = early.find(int(i));
      if (provisional != early.end()) {
        std::tie(step.result, step.call_ms) = provisional->second.second.get();
        step.executed_early = provisional->second.first == step.call;
        step.rerun = !step.executed_early;
        if (step.rerun) std::tie(step.result, step.call_ms) = timed_call(server, step.call);
      } else if (box.by_name.at(step.call.name).destructive &&
                 !(options.confirm && options.confirm(step.call, step.server))) {
        step.declined = true;
        step.result = {"the user did not allow this call of " + step.call.name + ", which the server marks destructive",
                       true, Json()};
      } else {
        std::tie(step.result, step.call_ms) = timed_call(server, step.call);
      }
      Message result{"tool", result_message(step.result)};
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
