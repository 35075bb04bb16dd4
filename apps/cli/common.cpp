// The helpers the subcommands share (common.h).
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "common.h"

namespace cli {

std::string cache_dir() {
  const char* cache = std::getenv("SCHEMAWEAVER_CACHE");
  const char* home = std::getenv("HOME");
  if (cache && *cache) return cache;
  if (home && *home) return std::string(home) + "/.cache/schemaweaver";
  return "";
}

void route_llama_log() {
  if (!std::getenv("SW_LLAMA_LOG")) return;
  sw::set_log_callback([](sw::LogLevel, const std::string& text) { std::cerr << text; });
}

sw::ModelParams ModelOptions::with_measurements() {
  sw::ModelParams params;
  params.measurements_dir = cache_dir();
  return params;
}

void ModelOptions::add_to(CLI::App& app) {
  app.add_option("-m,--model", params.path, "GGUF model file")->required();
  app.add_option("-c,--ctx", params.context_size, "context size in tokens (0: the model's own)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("-t,--threads", params.threads, "threads (0: all cores)")->capture_default_str()->check(CLI::Range(0, 1024));
  app.add_option("--format", params.call_format,
                 "call format: smollm2, hermes, hermes-list, json (default: the model's chat template says)");
  app.add_option("--chat-template", "a Jinja chat template file used instead of the model's")
      ->each([this](const std::string& path) { params.chat_template = read_file(path); });
  app.add_flag("--no-mmap{false}", params.mmap, "read the weights into memory instead of mapping the file");
  app.add_flag("--no-repack{false}", params.repack, "use the weights as stored (no repacking for the CPU's kernels)");
  app.add_flag("--stream-weights", params.stream, "pipelined load: compute starts while later weights are read");
}

void PromptCacheOptions::add_to(CLI::App& app) {
  app.add_option("--prompt-cache-dir", dir,
                 "keep tool-set prefixes (system message and tools, computed) in this folder, for later calls and "
                 "processes (default: $SCHEMAWEAVER_PROMPT_CACHE, 'off' for none, else prompts/ in "
                 "$SCHEMAWEAVER_CACHE or ~/.cache/schemaweaver)");
  app.add_option("--prompt-cache-size", max_mib, "MiB the prompt cache folder holds at most (least recently used out)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t(0), uint64_t(1) << 30));
  app.add_flag("--no-prompt-cache", off, "neither read nor write the prompt cache");
}

void PromptCacheOptions::apply(sw::Session& session) const {
  if (off) return;
  std::string folder = dir;
  if (folder.empty()) {
    const char* own = std::getenv("SCHEMAWEAVER_PROMPT_CACHE");
    if (own && std::string(own) == "off") return;
    if (own && *own) folder = own;
    else if (const std::string cache = cache_dir(); !cache.empty()) folder = cache + "/prompts";
    else return;  // nowhere to keep it
  }
  session.use_prompt_cache(folder, max_mib << 20);
}

void PassCostOptions::add_to(CLI::App& app) {
  app.add_option("--pass-costs", file,
                 "plan as if passes cost this table (JSON: ms of a pass of 1, 2, ... tokens, or `costs --json`'s "
                 "output, with \"ms_per_kept_row\" where known) instead of what this machine's passes are learnt "
                 "to cost");
}

void PassCostOptions::apply(sw::Session& session) const {
  if (file.empty()) return;
  const sw::Json table = read_json_file(file);
  const sw::Json& list = table.is_object() && table.contains("pass_ms_by_tokens") ? table["pass_ms_by_tokens"] : table;
  if (!list.is_array() || !std::all_of(list.begin(), list.end(), [](const sw::Json& t) { return t.is_number(); }))
    throw sw::Error(file + ": a pass-cost table is a list of ms (a pass of 1, 2, ... tokens) or an object with "
                           "\"pass_ms_by_tokens\"");
  const sw::Json row = table.is_object() ? table.value("ms_per_kept_row", sw::Json(0.0)) : sw::Json(0.0);
  if (!row.is_number()) throw sw::Error(file + ": \"ms_per_kept_row\" is a number of ms");
  session.use_pass_costs(list.get<std::vector<double>>(), row.get<double>());
}

ModeSpec parse_mode_spec(const std::string& text) {
  ModeSpec spec;
  spec.label = text;
  for (const std::string& own : sw::apply_mode(text, spec.options, {"draft-model", "given-args", "read-only"})) {
    const sw::DecodeMode wanted = own == "draft-model" ? sw::DecodeMode::Speculative : sw::DecodeMode::SchemaWeaver;
    if (spec.options.mode != wanted)
      throw sw::Error("'" + text + "': '" + own + "' is a switch of the " + sw::to_string(wanted) + " mode");
    if (own == "draft-model") spec.draft_model = true;
    else if (own == "given-args") spec.given_arguments = true;
    else spec.read_only_tools = true;
  }
  return spec;
}

std::shared_ptr<const sw::Model> load_draft_model(const std::string& path, const sw::ModelParams& main,
                                                  const std::vector<ModeSpec>& modes) {
  bool wanted = std::any_of(modes.begin(), modes.end(), [](const ModeSpec& m) { return m.draft_model; });
  if (wanted && path.empty()) throw sw::Error("speculative/draft-model needs --draft-model");
  if (path.empty()) return nullptr;
  sw::ModelParams params = main;
  params.path = path;
  params.call_format.clear();
  return sw::Model::load(params);
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw sw::Error("cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(file), {});
}

sw::Json parse_json_text(const std::string& text, const std::string& what) {
  try {
    return sw::Json::parse(text);
  } catch (const sw::Json::parse_error& e) {
    throw sw::Error(what + " is not valid JSON: " + e.what());
  }
}

void TemplateOptions::add_to(CLI::App& app, const std::string& thinking_help) {
  app.add_option("--thinking", thinking, thinking_help)->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--template-kwargs", template_kwargs,
                 "variables for the model's chat template, as a JSON object (llama-server's chat_template_kwargs)");
}

void TemplateOptions::apply(sw::CallOptions& options) const {
  options.thinking_budget = thinking;
  if (!template_kwargs.empty()) options.template_kwargs = parse_json_text(template_kwargs, "--template-kwargs");
}

void RepeatedCallsOption::add_to(CLI::App& app) {
  app.add_option("--repeated-calls", choice,
                 "calls that repeat one the conversation already made and got a result for: keep them (counted "
                 "in the stats), or answer in text instead (under tool choice auto)")
      ->check(CLI::IsMember({"keep", "answer"}))
      ->capture_default_str();
}

void RepeatedCallsOption::apply(sw::CallOptions& options) const {
  options.answer_instead_of_repeating = choice == "answer";
}

void SamplingOptions::add_to(CLI::App& app) {
  app.add_option("--temperature", sampling.temperature, "draw tokens at this temperature (0: greedy)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--top-k", sampling.top_k, "when drawing: the most likely allowed tokens kept (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--top-p", sampling.top_p, "when drawing: the smallest set holding this probability (1: all)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--min-p", sampling.min_p, "when drawing: tokens at least this share of the best one's (0: all)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option_function<uint64_t>("--sampling-seed", [this](uint64_t value) { seed = value, seeded = true; },
                                    "when drawing: the seed of the draws (default: a random one)");
}

void SamplingOptions::apply(sw::CallOptions& options) const {
  options.sampling = sampling;
  if (seeded) options.sampling.seed = seed;
}

sw::Json read_json_file(const std::string& path) { return parse_json_text(read_file(path), "'" + path + "'"); }

void write_json_file(const std::string& path, const sw::Json& json) {
  std::ofstream out(path);
  if (!(out << json.dump(2) << "\n")) throw sw::Error("cannot write '" + path + "'");
}

}  // namespace cli
