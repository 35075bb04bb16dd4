// schemaweaver: fast tool calls from small on-device language models.
#include <cmath>
#include <algorithm>
#include <fstream>
#include <iostream>

#include "common.h"

namespace cli {

void ModelOptions::add_to(CLI::App& app) {
  app.add_option("-m,--model", params.path, "GGUF model file")->required();
  app.add_option("-c,--ctx", params.context_size, "context size in tokens")->capture_default_str();
  app.add_option("-t,--threads", params.threads, "threads (0: all cores)")->capture_default_str();
  app.add_option("--format", params.call_format, "call format: smollm2, hermes, json (default: detect)");
  app.add_flag("--no-mmap{false}", params.mmap, "read the weights into memory instead of mapping the file");
  app.add_flag("--no-repack{false}", params.repack, "use the weights as stored (no repacking for the CPU's kernels)");
  app.add_flag("--stream-weights", params.stream, "pipelined load: compute starts while later weights are read");
}

ModeSpec parse_mode_spec(const std::string& text) {
  ModeSpec spec;
  spec.label = text;
  size_t slash = text.find('/');
  spec.options.mode = sw::parse_decode_mode(text.substr(0, slash));
  while (slash != std::string::npos) {
    size_t next = text.find('/', slash + 1);
    std::string flag = text.substr(slash + 1, next == std::string::npos ? std::string::npos : next - slash - 1);
    slash = next;
    if (flag == "draft-model" && spec.options.mode == sw::DecodeMode::Speculative) {
      spec.draft_model = true;
      continue;
    }
    if (flag == "auto") {  // OpenAI's tool_choice auto: the model may answer in text
      spec.options.tool_choice = sw::ToolChoice::Auto;
      continue;
    }
    if (spec.options.mode != sw::DecodeMode::SchemaWeaver)
      throw sw::Error("'" + text + "': switches apply to the schemaweaver mode only (every mode takes auto, speculative draft-model)");
    if (flag == "no-parallel") spec.options.weaver.parallel_values = false;
    else if (flag == "no-padding") spec.options.weaver.padding = false;
    else if (flag == "no-provisional") spec.options.weaver.provisional = false;
    else if (flag == "drafts") spec.options.weaver.drafts = true;
    else if (flag == "whole-turn") spec.options.weaver.whole_turn = true;
    else if (flag == "unverified") spec.options.weaver.verify = false;
    else if (flag == "given-args") spec.given_arguments = true;
    else if (flag == "read-only") spec.read_only_tools = true;
    else throw sw::Error("'" + text + "': unknown switch '" + flag +
                         "' (known: auto, no-parallel, no-padding, no-provisional, drafts, whole-turn, unverified, given-args, read-only)");
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

sw::Json stats_json(const sw::CallStats& s) {
  // The closest decision of the answer: where greedy decoding could go another way on other
  // kernels or other pass shapes.
  sw::Json closest = nullptr;
  for (const sw::Decision& d : s.decisions) {
    if (std::isfinite(d.margin) && (closest.is_null() || d.margin < closest.get<double>())) closest = d.margin;
  }
  sw::Json phases = sw::Json::array();
  for (const sw::PhaseStats& p : s.phases)
    phases.push_back({{"name", p.name}, {"passes", p.passes}, {"tokens", p.tokens}, {"ms", p.ms}});
  return {{"prompt_tokens", s.prompt_tokens}, {"prompt_reused_tokens", s.prompt_reused_tokens},
          {"prompt_passes", s.prompt_passes}, {"prompt_ms", s.prompt_ms}, {"executable_ms", s.executable_ms},
          {"call_ms", s.call_ms}, {"call_passes", s.call_passes}, {"call_prefill_passes", s.call_prefill_passes},
          {"call_tokens", s.call_tokens}, {"sampled_tokens", s.sampled_tokens},
          {"constraint_ms", s.constraint_ms}, {"constraint_steps", s.constraint_steps},
          {"draft_tokens", s.draft_tokens}, {"accepted_draft_tokens", s.accepted_draft_tokens},
          {"peak_rss_kb", s.peak_rss_kb}, {"phases", phases}, {"smallest_margin", closest},
          {"verification",
           {{"checked_tokens", s.verification.checked_tokens}, {"repaired_calls", s.verification.repaired_calls},
            {"discarded_tokens", s.verification.discarded_tokens},
            {"unverified_calls", s.verification.unverified_calls}}}};
}

sw::Json events_json(const std::vector<sw::CallEvent>& events) {
  sw::Json out = sw::Json::array();
  for (const sw::CallEvent& e : events)
    out.push_back({{"kind", e.kind == sw::CallEvent::Kind::Provisional ? "provisional" : "final"},
                   {"index", e.index}, {"call", e.call.to_json()}, {"at_ms", e.at_ms},
                   {"replaces_provisional", e.replaces_provisional}});
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw sw::Error("cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(file), {});
}

sw::Json read_json_file(const std::string& path) {
  try {
    return sw::Json::parse(read_file(path));
  } catch (const sw::Json::parse_error& e) {
    throw sw::Error("'" + path + "' is not valid JSON: " + e.what());
  }
}

void write_json_file(const std::string& path, const sw::Json& json) {
  std::ofstream out(path);
  if (!(out << json.dump(2) << "\n")) throw sw::Error("cannot write '" + path + "'");
}

}  // namespace cli

int main(int argc, char** argv) {
  CLI::App app{"schemaweaver: fast tool calls from small language models, on llama.cpp"};
  app.require_subcommand(1);
  cli::add_call_command(app);
  cli::add_bfcl_command(app);
  cli::add_costs_command(app);
  cli::add_info_command(app);
  cli::add_serve_command(app);
  cli::add_agent_command(app);
  cli::add_pack_command(app);
  cli::add_quality_command(app);
  cli::add_shape_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const sw::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
