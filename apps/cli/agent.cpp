// `agent`: a request answered by the model with tools from MCP servers (see schemaweaver/mcp.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "common.h"
#include "schemaweaver/mcp.h"

namespace cli {
namespace {

// Servers from a config file in the common form {"mcpServers": {"name": {"command", "args"} or
// {"url", "headers": {"Name": "value"}}}}.
std::vector<sw::McpConnection> config_connections(const std::string& path) {
  sw::Json config = read_json_file(path);
  if (!config.is_object() || !config.contains("mcpServers") || !config["mcpServers"].is_object())
    throw sw::Error("'" + path + "': expected {\"mcpServers\": {\"name\": {\"command\": ..., \"args\": [...]} or {\"url\": ...}}}");
  std::vector<sw::McpConnection> connections;
  for (const auto& entry : config["mcpServers"].items()) {
    // Named, not a structured binding: a lambda may not capture a binding before C++20 (clang refuses).
    const std::string& name = entry.key();
    const sw::Json& server = entry.value();
    const auto strings = [&](const char* key) {
      return server.contains(key) && server[key].is_string() ? server[key].get<std::string>() : std::string();
    };
    sw::McpConnection connection;
    if (!strings("url").empty()) {
      connection.url = strings("url");
      for (const auto& [header, value] : server.value("headers", sw::Json::object()).items()) {
        if (!value.is_string()) throw sw::Error("'" + path + "': the headers of '" + name + "' must be strings");
        connection.headers.push_back(header + ": " + value.get<std::string>());
      }
    } else if (!strings("command").empty()) {
      connection.command.push_back(strings("command"));
      for (const sw::Json& arg : server.value("args", sw::Json::array())) {
        if (!arg.is_string()) throw sw::Error("'" + path + "': the args of '" + name + "' must be strings");
        connection.command.push_back(arg.get<std::string>());
      }
    } else {
      throw sw::Error("'" + path + "': server '" + name + "' needs a string \"command\" or \"url\"");
    }
    connections.push_back(connection);
  }
  return connections;
}

// Whether the user allows a call of a tool its server marks destructive: asked on the terminal;
// with no terminal to ask on, not allowed (--yes allows every one).
bool ask_to_run(const sw::ToolCall& call, const std::string& server) {
  std::fprintf(stderr, "%s on %s is marked destructive: run %s? [y/N] ", call.name.c_str(), server.c_str(),
               sw::dump_json(call.arguments).c_str());
  if (!isatty(STDIN_FILENO)) {
    std::fprintf(stderr, "no (no terminal to ask on; --yes allows it)\n");
    return false;
  }
  std::string answer;
  std::getline(std::cin, answer);
  return !answer.empty() && (answer[0] == 'y' || answer[0] == 'Y');
}

struct AgentCommand {
  ModelOptions model;
  PromptCacheOptions prompt_cache;
  PassCostOptions pass_costs;
  std::vector<std::string> mcp;
  std::vector<std::string> mcp_headers;
  int mcp_timeout_ms = 30000;
  std::string mcp_revision;
  std::string config_path;
  std::vector<std::string> tools;
  std::vector<std::string> prompts;
  std::string mode = "schemaweaver";
  int max_rounds = 6;
  int max_tokens = 256;
  int max_calls = 0;
  TemplateOptions template_options;
  RepeatedCallsOption repeated_calls;
  bool require_call = false;
  bool json = false;
  bool yes = false;
  bool verbose = false;

  void run() const {
    std::vector<sw::McpConnection> connections;
    for (const std::string& where : mcp) connections.push_back(sw::mcp_connection(where));
    if (!config_path.empty()) {
      for (auto& connection : config_connections(config_path)) connections.push_back(connection);
    }
    if (connections.empty()) throw sw::Error("give MCP servers with --mcp or --config");
    if (mcp_timeout_ms < 1) throw sw::Error("--mcp-timeout must be at least 1 ms");
    ModeSpec spec = parse_mode_spec(mode);
    if (spec.given_arguments || spec.read_only_tools || spec.draft_model)
      throw sw::Error("'" + mode + "': the agent takes the read-only marks from the MCP servers");
    if (spec.options.tool_choice == sw::ToolChoice::Auto)
      throw sw::Error("'" + mode + "': the agent decides between calls and text itself (--require-call)");
    std::vector<std::unique_ptr<sw::McpServer>> servers;
    std::vector<sw::McpServer*> used;
    for (sw::McpConnection& connection : connections) {
      if (!connection.url.empty()) connection.headers.insert(connection.headers.end(), mcp_headers.begin(), mcp_headers.end());
      connection.timeout = std::chrono::milliseconds(mcp_timeout_ms);
      connection.revision = mcp_revision;
      if (verbose) connection.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
      servers.push_back(std::make_unique<sw::McpServer>(connection));
      used.push_back(servers.back().get());
      for (const sw::ToolSpec& t : servers.back()->tools())
        std::fprintf(stderr, "tool %s from %s%s\n", t.name.c_str(), servers.back()->name().c_str(),
                     t.read_only ? " (read-only)" : t.destructive ? " (destructive)" : "");
    }
    auto loaded = sw::Model::load(model.params);
    sw::Session session(loaded);
    prompt_cache.apply(session);
    pass_costs.apply(session);
    sw::AgentOptions options;
    options.call = spec.options;
    options.call.max_tokens = max_tokens;
    options.call.max_calls = max_calls;
    template_options.apply(options.call);
    repeated_calls.apply(options.call);
    options.max_rounds = max_rounds;
    options.first_turn_calls = require_call;
    options.tools = tools;
    options.confirm = yes ? [](const sw::ToolCall&, const std::string&) { return true; } : ask_to_run;
    // Each prompt a user's turn of one conversation, after the answer to the one before; a turn
    // whose call was not valid ends unanswered and the next goes on, as a chat would.
    std::vector<sw::Message> conversation;
    sw::Json steps = sw::Json::array(), answers = sw::Json::array(), errors = sw::Json::array();
    int rounds = 0;
    for (size_t turn = 0; turn < prompts.size(); ++turn) {
      conversation.push_back({"user", prompts[turn]});
      sw::AgentResult r = sw::run_agent(session, used, conversation, options, [](const sw::AgentStep& step) {
        std::fprintf(stderr, "round %d: %s -> %s%s%s\n", step.round, sw::dump_json(step.call.to_json()).c_str(),
                     step.result.is_error ? "error: " : "", step.result.text.c_str(),
                     step.executed_early ? " (ran on the provisional call)"
                     : step.rerun        ? " (ran again: the call changed)"
                     : step.declined     ? " (not run)"
                                         : "");
      });
      for (const sw::AgentStep& s : r.steps)
        steps.push_back({{"turn", turn}, {"round", s.round}, {"call", s.call.to_json()}, {"server", s.server},
                         {"result", s.result.text}, {"is_error", s.result.is_error}, {"call_ms", s.call_ms},
                         {"executed_early", s.executed_early}, {"rerun", s.rerun}, {"declined", s.declined}});
      conversation = std::move(r.conversation);
      answers.push_back(r.answer);
      rounds += r.rounds;
      if (!r.error.empty()) {
        std::fprintf(stderr, "turn %zu: %s\n", turn + 1, r.error.c_str());
        errors.push_back({{"turn", turn}, {"error", r.error}});
      } else if (!r.answered) {
        errors.push_back({{"turn", turn}, {"error", "no answer after " + std::to_string(options.max_rounds) + " round(s)"}});
        break;  // the rounds ran out: the later turns would build on nothing
      }
    }
    const std::string answer = answers.back().get<std::string>();
    if (json) {
      std::cout << sw::Json{{"answer", answer}, {"answers", answers}, {"rounds", rounds}, {"steps", steps},
                            {"errors", errors}}.dump()
                << "\n";
    } else {
      std::cout << answer << "\n";
    }
    if (!errors.empty())
      throw sw::Error("turn " + std::to_string(errors.back()["turn"].get<size_t>() + 1) + ": " +
                      errors.back()["error"].get<std::string>());
  }
};

}  // namespace

void add_agent_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("agent", "answer a request with tools from MCP servers (stdio or Streamable HTTP)");
  auto c = std::make_shared<AgentCommand>();
  c->model.add_to(*cmd);
  c->prompt_cache.add_to(*cmd);
  c->pass_costs.add_to(*cmd);
  cmd->add_option("--mcp", c->mcp,
                  "an MCP server: a command, e.g. \"mcp-server-time\" (split at spaces), or an http(s):// URL "
                  "(Streamable HTTP); repeatable");
  cmd->add_option("--mcp-header", c->mcp_headers, "\"Name: value\" sent to every HTTP server (a bearer token); repeatable");
  cmd->add_option("--mcp-timeout", c->mcp_timeout_ms, "ms an MCP server may take to answer")->capture_default_str();
  cmd->add_option("--mcp-revision", c->mcp_revision,
                  "offer only this MCP revision (2026-07-28, 2025-11-25 or 2025-06-18; default: the current one, "
                  "falling back)");
  cmd->add_option("--config", c->config_path,
                  "MCP servers from a JSON file {\"mcpServers\": {\"name\": {\"command\", \"args\"} or {\"url\", \"headers\"}}}");
  cmd->add_flag("--yes", c->yes, "run the calls of tools marked destructive without asking");
  cmd->add_flag("-v,--verbose", c->verbose, "say which MCP revision each server agreed and which tools were left out");
  cmd->add_option("--tools", c->tools, "show the model only these of the servers' tools")->delimiter(',');
  cmd->add_option("-p,--prompt", c->prompts,
                  "the user's request; repeated, the user's turns of one conversation, each after the answer to the last")
      ->required();
  cmd->add_option("--mode", c->mode, "decoding mode of each turn")->capture_default_str();
  cmd->add_option("--max-rounds", c->max_rounds, "model turns at most")->capture_default_str();
  cmd->add_option("-n,--max-tokens", c->max_tokens, "generated tokens per turn at most")->capture_default_str();
  cmd->add_option("--max-calls", c->max_calls, "calls per turn at most (0: any number)")->capture_default_str();
  c->template_options.add_to(
      *cmd, "a reasoning template's thinking block on in every turn, this many tokens at most (0: off)");
  c->repeated_calls.add_to(*cmd);
  cmd->add_flag("--require-call", c->require_call, "the first turn must call a tool (then the model decides)");
  cmd->add_flag("--json", c->json, "print the answer and every step as JSON");
  cmd->callback([c] { c->run(); });
}

}  // namespace cli
