#include <chrono>
#include <cstdio>
#include <iostream>

#include "common.h"
#include "schemaweaver/openai.h"

namespace cli {
namespace {

// When the answer's milestones came, in ms from the command's start (before the model is
// loaded): what a cold start costs the first call.
struct SinceStart {
  double first_token_ms = 0;  // the prompt read: the first token can be sampled
  double executable_ms = 0;   // every call of the turn can be executed
};

struct CallCommand {
  ModelOptions model;
  PromptCacheOptions prompt_cache;
  PassCostOptions pass_costs;
  std::string tools_path;
  std::string schema_path;
  std::string prompt;
  std::string messages_path;
  std::string mode = "schemaweaver";
  std::string tool;
  std::vector<std::string> given_arguments;
  std::vector<std::string> read_only;
  std::string draft_model;
  std::string prompt_state;
  std::string tool_choice = "required";
  RepeatedCallsOption repeated_calls;
  int max_tokens = 256;
  int max_calls = 0;
  TemplateOptions template_options;
  SamplingOptions sampling;
  std::vector<std::string> stop;
  int logprobs = -1;
  bool json = false;
  bool print_prompt = false;

  std::vector<sw::Message> messages() const {
    if (messages_path.empty()) return {{"user", prompt}};
    const sw::Json list = read_json_file(messages_path);
    try {
      return sw::openai::parse_messages(list);
    } catch (const sw::Error& e) {
      throw sw::Error("'" + messages_path + "': " + e.what());
    }
  }

  void run() const {
    const auto started = std::chrono::steady_clock::now();
    ModeSpec spec = parse_mode_spec(mode);
    if (spec.given_arguments) throw sw::Error("give the argument set with --given-arguments");
    if (spec.read_only_tools) throw sw::Error("name the read-only tools with --read-only");
    if (spec.options.tool_choice == sw::ToolChoice::Auto) throw sw::Error("give the tool choice with --tool-choice");
    sw::CallOptions options = spec.options;
    options.max_tokens = max_tokens;
    options.max_calls = max_calls;
    template_options.apply(options);
    sampling.apply(options);
    options.stop = stop;
    options.logprobs = logprobs;
    options.tool_choice = sw::parse_tool_choice(tool_choice);
    repeated_calls.apply(options);
    if (options.answer_instead_of_repeating && options.tool_choice != sw::ToolChoice::Auto)
      throw sw::Error("--repeated-calls answer needs --tool-choice auto (the model may then answer in text)");
    options.tool = tool;
    options.given_arguments = given_arguments;
    std::vector<sw::ToolSpec> tools = tools_path.empty() ? std::vector<sw::ToolSpec>{} : sw::parse_tools(read_json_file(tools_path));
    for (const std::string& name : read_only) mark_read_only(tools, name);
    std::vector<sw::Message> chat = messages();
    auto loaded = sw::Model::load(model.params);
    // With tools, a schema is the answer where the model does not call (--tool-choice auto).
    auto compiled = tools_path.empty() ? sw::compile_schema(loaded, response_schema()) : sw::compile_tools(loaded, tools);
    if (!tools_path.empty() && !schema_path.empty()) options.answer_schema = sw::compile_schema(loaded, response_schema());
    options.draft_model = load_draft_model(draft_model, model.params, {spec});
    if (print_prompt) std::cerr << sw::render_prompt(*loaded, chat, tools, options) << "\n";
    sw::Session session(loaded);
    prompt_cache.apply(session);
    pass_costs.apply(session);
    const int restored = prompt_state.empty() ? 0 : session.restore_prompt_state(prompt_state);
    if (!json) {
      options.on_call = [](const sw::CallEvent& e) {
        std::fprintf(stderr, "%.1f ms: %s call %d %s%s\n", e.at_ms,
                     e.kind == sw::CallEvent::Kind::Provisional ? "provisional" : "final", e.index,
                     sw::dump_json(e.call.to_json()).c_str(),
                     e.replaces_provisional ? " (replaces the provisional call)" : "");
      };
    }
    sw::CallResult result = session.call(chat, *compiled, options);
    result.stats.compile_ms += compiled->compile_ms();
    const double total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    const SinceStart since{total_ms - result.stats.call_ms, total_ms - result.stats.call_ms + result.stats.executable_ms};
    const double load_ms = loaded->info().load_ms;
    // The state is refreshed whenever this call computed more of its prompt than it restored.
    if (!prompt_state.empty() && result.stats.prompt_reused_tokens + 1 < result.stats.prompt_tokens)
      session.save_prompt_state(prompt_state);
    json ? print_json(result, load_ms, since, restored) : print_text(result, load_ms, since, restored);
    if (!result.error.empty()) throw sw::Error("no valid call: " + result.error);
  }

  // The --schema file: a JSON Schema, or OpenAI's json_schema object around one ({"name", "schema"}).
  sw::ToolSpec response_schema() const {
    const sw::Json file = read_json_file(schema_path);
    try {
      return sw::parse_response_schema_document(file);
    } catch (const sw::Error& e) {
      throw sw::Error("'" + schema_path + "': " + e.what());
    }
  }

  static void mark_read_only(std::vector<sw::ToolSpec>& tools, const std::string& name) {
    for (sw::ToolSpec& t : tools) {
      if (t.name == name) {
        t.read_only = true;
        return;
      }
    }
    throw sw::Error("--read-only: no tool is named '" + name + "'");
  }

  void print_text(const sw::CallResult& r, double load_ms, const SinceStart& since, int restored) const {
    if (!r.thinking_text.empty()) std::cout << "reasoning: " << r.reasoning << "\n";
    if (r.schema_answer && r.error.empty()) std::cout << r.text << "\n";
    for (const sw::ToolCall& call : r.schema_answer ? std::vector<sw::ToolCall>{} : r.calls)
      std::cout << sw::dump_json(call.to_json()) << "\n";
    if (r.text_reply) std::cout << r.text << "\n";
    else if (!r.error.empty()) std::cout << "output: " << r.text << "\n";
    if (r.stopped_at_max_tokens)
      std::fprintf(stderr, "cut at max_tokens (%d)%s\n", max_tokens,
                   r.schema_answer && r.error.empty() ? ": the object was closed by the shortest text its schema allows" : "");
    const sw::CallStats& s = r.stats;
    std::fprintf(stderr,
                 "mode %s | model loaded in %.1f ms | prompt %d tokens, %d pass(es), %.1f ms | executable at %.1f ms, answer "
                 "%.1f ms, %d passes (%d carried forced text) with %d tokens, %d sampled, constraint "
                 "%.1f ms over %d steps | peak RSS %.1f MiB\n",
                 mode.c_str(), load_ms, s.prompt_tokens, s.prompt_passes, s.prompt_ms, s.executable_ms, s.call_ms,
                 s.call_passes, s.call_prefill_passes, s.call_tokens, s.sampled_tokens,
                 s.constraint_ms, s.constraint_steps, double(s.peak_rss_kb) / 1024.0);
    std::fprintf(stderr, "  from the command's start: first token at %.1f ms, call executable at %.1f ms\n",
                 since.first_token_ms, since.executable_ms);
    if (!prompt_state.empty())
      std::fprintf(stderr, "  prompt state '%s': %d tokens restored, %d of the prompt's %d reused\n", prompt_state.c_str(),
                   restored, s.prompt_reused_tokens, s.prompt_tokens);
    if (s.prompt_restored_tokens > 0)
      std::fprintf(stderr, "  prompt cache: the tool-set prefix's %d tokens restored\n", s.prompt_restored_tokens);
    if (s.prompt_cache_stored_tokens > 0)
      std::fprintf(stderr, "  prompt cache: the tool-set prefix's %d tokens saved\n", s.prompt_cache_stored_tokens);
    if (s.draft_tokens > 0)
      std::fprintf(stderr, "  drafts: %d of %d draft tokens taken\n", s.accepted_draft_tokens, s.draft_tokens);
    for (const sw::PhaseStats& p : s.phases)
      std::fprintf(stderr, "  %-12s %3d passes %4d tokens %8.1f ms\n", p.name.c_str(), p.passes, p.tokens, p.ms);
  }

  void print_json(const sw::CallResult& r, double load_ms, const SinceStart& since, int restored) const {
    sw::Json out = r.to_json();
    out["mode"] = mode;
    out["load_ms"] = load_ms;
    out["since_start"] = {{"first_token_ms", since.first_token_ms}, {"executable_ms", since.executable_ms}};
    out["prompt_state_restored_tokens"] = restored;
    if (logprobs >= 0 && !out.contains("logprobs")) out["logprobs"] = sw::Json::array();
    std::cout << out.dump(-1, ' ', false, sw::Json::error_handler_t::replace) << "\n";
  }
};

}  // namespace

void add_call_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("call", "generate one tool call for a request");
  auto c = std::make_shared<CallCommand>();
  c->model.add_to(*cmd);
  c->prompt_cache.add_to(*cmd);
  c->pass_costs.add_to(*cmd);
  auto* tools = cmd->add_option("--tools", c->tools_path, "tools JSON file (OpenAI, MCP or BFCL style)");
  auto* schema = cmd->add_option("--schema", c->schema_path,
                                 "answer with one JSON object of this JSON Schema (or OpenAI json_schema object) "
                                 "instead of a call: a structured output (with --tools and --tool-choice auto: "
                                 "the answer where the model does not call)");
  auto* prompt = cmd->add_option("-p,--prompt", c->prompt, "the user's request");
  auto* messages = cmd->add_option("--messages", c->messages_path, "JSON list of OpenAI chat messages ({role, content}; an assistant's tool_calls, a tool's tool_call_id)");
  prompt->excludes(messages);
  cmd->add_option("--mode", c->mode,
                  "free, constrained, jump-forward, speculative, schemaweaver[/no-parallel][/no-padding][/no-provisional][/drafts][/whole-turn][/unverified][/no-adopt][/branches]")
      ->capture_default_str();
  cmd->add_option("--tool", c->tool, "use this tool (its name is not decoded)");
  cmd->add_option("--given-arguments", c->given_arguments, "schemaweaver: decode exactly these arguments (needs --tool)")
      ->delimiter(',');
  cmd->add_option("--read-only", c->read_only, "treat these tools as read-only (provisional calls)")->delimiter(',');
  cmd->add_option("--tool-choice", c->tool_choice, "required: a call; auto: the model may reply in text; none: text")
      ->check(CLI::IsMember({"required", "auto", "none"}))
      ->capture_default_str();
  c->repeated_calls.add_to(*cmd);
  cmd->add_option("--draft-model", c->draft_model, "speculative: draft with this smaller GGUF model of the same vocabulary");
  cmd->add_option("--prompt-state", c->prompt_state,
                  "restore the prompt's keys and values from this file if this model computed them; save them there "
                  "after the call when more was computed than restored");
  cmd->add_option("-n,--max-tokens", c->max_tokens, "generated tokens at most")->capture_default_str();
  c->template_options.add_to(
      *cmd, "a reasoning template's thinking block on: the model may reason this many tokens first (0: off)");
  cmd->add_option("--max-calls", c->max_calls, "calls in the answer at most (0: any number)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  c->sampling.add_to(*cmd);
  cmd->add_option("--stop", c->stop, "a reply in text ends before this text (repeatable)");
  cmd->add_option("--logprobs", c->logprobs,
                  "with --json: a reply in text's tokens with their log probabilities and this many likeliest "
                  "alternatives (0-20)")
      ->check(CLI::Range(0, 20));
  cmd->add_flag("--json", c->json, "print the result and stats as one JSON line");
  cmd->add_flag("--print-prompt", c->print_prompt, "print the rendered prompt on stderr first");
  cmd->callback([c, prompt, messages, tools, schema] {
    if (prompt->count() == 0 && messages->count() == 0)
      throw sw::Error("give the request with --prompt or --messages");
    if (tools->count() == 0 && schema->count() == 0) throw sw::Error("give the tools with --tools (or a schema with --schema)");
    c->run();
  });
}

}  // namespace cli
