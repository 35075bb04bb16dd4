// `agent`: a request answered by the model with tools from MCP servers (see schemaweaver/mcp.h).
#include <cstdio>
#include <iostream>
#include <sstream>

#include "common.h"
#include "schemaweaver/mcp.h"

namespace cli {
namespace {

// "program arg arg" split at spaces (no shell quoting).
std::vector<std::string> split_command(const std::string& text) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string part; in >> part;) parts.push_back(part);
  if (parts.empty()) throw sw::Error("--mcp: empty command");
  return parts;
}

// Servers from a config file in the common form {"mcpServers": {"name": {"command", "args"}}}.
std::vector<std::vector<std::string>> config_commands(const std::string& path) {
  sw::Json config = read_json_file(path);
  if (!config.is_object() || !config.contains("mcpServers") || !config["mcpServers"].is_object())
    throw sw::Error("'" + path + "': expected {\"mcpServers\": {\"name\": {\"command\": ..., \"args\": [...]}}}");
  std::vector<std::vector<std::string>> commands;
  for (const auto& [name, server] : config["mcpServers"].items()) {
    if (!server.is_object() || !server.contains("command") || !server["command"].is_string())
      throw sw::Error("'" + path + "': server '" + name + "' needs a string \"command\"");
    std::vector<std::string> command{server["command"].get<std::string>()};
    for (const sw::Json& arg : server.value("args", sw::Json::array())) {
      if (!arg.is_string()) throw sw::Error("'" + path + "': the args of '" + name + "' must be strings");
      command.push_back(arg.get<std::string>());
    }
    commands.push_back(command);
  }
  return commands;
}

struct AgentCommand {
  ModelOptions model;
  PromptCacheOptions prompt_cache;
  PassCostOptions pass_costs;
  std::vector<std::string> mcp;
  std::string config_path;
  std::vector<std::string> tools;
  std::string prompt;
  std::string mode = "schemaweaver";
  int max_rounds = 6;
  int max_tokens = 256;
  int max_calls = 0;
  TemplateOptions template_options;
  RepeatedCallsOption repeated_calls;
  bool require_call = false;
  bool json = false;

  void run() const {
    std::vector<std::vector<std::string>> commands;
    for (const std::string& text : mcp) commands.push_back(split_command(text));
    if (!config_path.empty()) {
      for (auto& command : config_commands(config_path)) commands.push_back(command);
    }
    if (commands.empty()) throw sw::Error("give MCP servers with --mcp or --config");
    ModeSpec spec = parse_mode_spec(mode);
    if (spec.given_arguments || spec.read_only_tools || spec.draft_model)
      throw sw::Error("'" + mode + "': the agent takes the read-only marks from the MCP servers");
    if (spec.options.tool_choice == sw::ToolChoice::Auto)
      throw sw::Error("'" + mode + "': the agent decides between calls and text itself (--require-call)");
    std::vector<std::unique_ptr<sw::McpServer>> servers;
    std::vector<sw::McpServer*> used;
    for (const auto& command : commands) {
      servers.push_back(std::make_unique<sw::McpServer>(command));
      used.push_back(servers.back().get());
      for (const sw::ToolSpec& t : servers.back()->tools())
        std::fprintf(stderr, "tool %s from %s%s\n", t.name.c_str(), servers.back()->name().c_str(),
                     t.read_only ? " (read-only)" : "");
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
    sw::AgentResult r = sw::run_agent(session, used, {{"user", prompt}}, options, [](const sw::AgentStep& step) {
      std::fprintf(stderr, "round %d: %s -> %s%s%s\n", step.round, sw::dump_json(step.call.to_json()).c_str(),
                   step.result.is_error ? "error: " : "", step.result.text.c_str(),
                   step.executed_early ? " (ran on the provisional call)" : step.rerun ? " (ran again: the call changed)" : "");
    });
    if (json) {
      sw::Json steps = sw::Json::array();
      for (const sw::AgentStep& s : r.steps)
        steps.push_back({{"round", s.round}, {"call", s.call.to_json()}, {"server", s.server},
                         {"result", s.result.text}, {"is_error", s.result.is_error},
                         {"executed_early", s.executed_early}, {"rerun", s.rerun}});
      std::cout << sw::Json{{"answer", r.answer}, {"rounds", r.rounds}, {"steps", steps}}.dump() << "\n";
    } else {
      std::cout << r.answer << "\n";
    }
    if (r.answer.empty()) throw sw::Error("no answer after " + std::to_string(r.rounds) + " round(s)");
  }
};

}  // namespace

void add_agent_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("agent", "answer a request with tools from MCP servers (stdio)");
  auto c = std::make_shared<AgentCommand>();
  c->model.add_to(*cmd);
  c->prompt_cache.add_to(*cmd);
  c->pass_costs.add_to(*cmd);
  cmd->add_option("--mcp", c->mcp, "an MCP server command, e.g. \"mcp-server-time\" (repeatable; split at spaces)");
  cmd->add_option("--config", c->config_path, "MCP servers from a JSON file {\"mcpServers\": {...}}");
  cmd->add_option("--tools", c->tools, "show the model only these of the servers' tools")->delimiter(',');
  cmd->add_option("-p,--prompt", c->prompt, "the user's request")->required();
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
