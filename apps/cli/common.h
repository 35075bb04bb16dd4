// Options and helpers shared by the CLI's subcommands.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "schemaweaver/engine.h"

namespace cli {

// The folder the CLI keeps measurements and prompt states in: $SCHEMAWEAVER_CACHE, else
// ~/.cache/schemaweaver; "" where there is neither (nothing is kept then).
std::string cache_dir();

// Routes llama.cpp's log to stderr when $SW_LLAMA_LOG is set (the library prints nothing).
void route_llama_log();

// Model options every model-using subcommand takes; the pass costs it learns are kept in
// cache_dir().
struct ModelOptions {
  sw::ModelParams params = with_measurements();
  static sw::ModelParams with_measurements();
  void add_to(CLI::App& app);
};

// The prompt cache on disk (Session::use_prompt_cache): on by default, in --prompt-cache-dir,
// else $SCHEMAWEAVER_PROMPT_CACHE ("off": none), else prompts/ under $SCHEMAWEAVER_CACHE or
// ~/.cache/schemaweaver.
struct PromptCacheOptions {
  std::string dir;
  bool off = false;
  uint64_t max_mib = 1024;
  void add_to(CLI::App& app);
  void apply(sw::Session& session) const;  // throws sw::Error if the folder cannot be made
};

// --pass-costs FILE: plan, pad and draft as if passes cost what the file says (Session::
// use_pass_costs) instead of what this machine's passes are learnt to cost - another machine's
// table. The file is JSON: the ms of a pass of 1, 2, ... tokens as a list, or an object with
// that list as "pass_ms_by_tokens" (what `costs --json` prints).
struct PassCostOptions {
  std::string file;
  void add_to(CLI::App& app);
  void apply(sw::Session& session) const;  // throws sw::Error on a file that is not such a table
};

// The template's thinking block and other variables, as `call` and `agent` take them.
struct TemplateOptions {
  int thinking = 0;
  std::string template_kwargs;
  void add_to(CLI::App& app, const std::string& thinking_help);
  void apply(sw::CallOptions& options) const;  // throws sw::Error when the variables are not JSON
};

// What becomes of calls that repeat one the conversation already made and got a result for
// (--repeated-calls keep|answer; sw::CallOptions::answer_instead_of_repeating), as `call` and
// `agent` take it.
struct RepeatedCallsOption {
  std::string choice = "keep";
  void add_to(CLI::App& app);
  void apply(sw::CallOptions& options) const;  // after the tool choice; answer needs auto
};

// How tokens are chosen (sw::Sampling): greedy unless --temperature is above 0.
struct SamplingOptions {
  sw::Sampling sampling;
  uint64_t seed = 0;
  bool seeded = false;
  void add_to(CLI::App& app);
  void apply(sw::CallOptions& options) const;
};

// A decoding mode and its SchemaWeaver switches, written "mode[/switch...]": switches are
// no-parallel, no-padding, no-provisional, drafts, whole-turn, given-args (the argument set is
// taken from the expected answer, where there is one) and read-only (every tool is treated as
// read-only, so provisional calls apply). The speculative mode takes draft-model (drafts from
// the model given by --draft-model instead of prompt lookup). Throws sw::Error on an unknown
// mode or switch.
struct ModeSpec {
  std::string label;
  sw::CallOptions options;
  bool given_arguments = false;
  bool read_only_tools = false;
  bool draft_model = false;
};
ModeSpec parse_mode_spec(const std::string& text);

// The draft model for speculative decoding: loaded like the main model (threads, context) if
// `path` is set; a mode that wants one without a path is an error.
std::shared_ptr<const sw::Model> load_draft_model(const std::string& path, const sw::ModelParams& main,
                                                  const std::vector<ModeSpec>& modes);

std::string read_file(const std::string& path);   // throws sw::Error naming the path
sw::Json read_json_file(const std::string& path); // throws sw::Error with the parse position
sw::Json parse_json_text(const std::string& text, const std::string& what);  // `what` names it in the error
void write_json_file(const std::string& path, const sw::Json& json);  // throws sw::Error naming the path

void add_call_command(CLI::App& app);
void add_bfcl_command(CLI::App& app);
void add_bfcl_cases_command(CLI::App& app);
void add_costs_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_agent_command(CLI::App& app);
void add_pack_command(CLI::App& app);
void add_parse_command(CLI::App& app);
void add_quality_command(CLI::App& app);
void add_shape_command(CLI::App& app);

}  // namespace cli
