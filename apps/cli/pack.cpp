// `pack`: a model repacked under a byte budget (fewer bits where the weights matter least,
// measured on a calibration text) or a time budget (the types this CPU multiplies fastest where
// they cost least accuracy), written as a GGUF file that stock llama.cpp runs.
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "common.h"
#include "progress_line.h"
#include "schemaweaver/pack.h"

namespace cli {
namespace {

// "1:0.72,8:0.28" -> {1: 0.72, 8: 0.28}.
std::map<int, double> parse_mix(const std::string& text) {
  std::map<int, double> mix;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    int tokens = 0;
    double share = 0;
    int used = 0;
    if (std::sscanf(item.c_str(), "%d:%lf%n", &tokens, &share, &used) != 2 || size_t(used) != item.size())
      throw sw::Error("'" + item + "' in the pass mix is not TOKENS:SHARE (e.g. 1:0.7,4:0.3)");
    mix[tokens] = share;
  }
  return mix;
}

std::string mix_text(const std::map<int, double>& mix) {
  std::string text;
  for (const auto& [tokens, share] : mix) {
    char item[32];
    std::snprintf(item, sizeof item, "%s%d:%.2f", text.empty() ? "" : ",", tokens, share);
    text += item;
  }
  return text;
}

// The allocation as a table: one row per layer, one column per kind of matrix.
void print_allocation(const sw::PackResult& r) {
  std::map<int, std::map<std::string, std::string>> by_layer;
  std::set<std::string> kinds;
  for (const sw::PackedTensor& t : r.tensors) {
    // "blk.3.ffn_down.weight" -> "ffn_down"; "output.weight" -> "output"
    std::string kind = t.layer >= 0 ? t.name.substr(t.name.find('.', 4) + 1) : t.name;
    kind = kind.substr(0, kind.rfind(".weight"));
    by_layer[t.layer][kind] = t.type;
    kinds.insert(kind);
  }
  std::printf("| layer |");
  for (const std::string& k : kinds) std::printf(" %s |", k.c_str());
  std::printf("\n|---|");
  for (size_t i = 0; i < kinds.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& [layer, types] : by_layer) {
    std::printf("| %s |", layer < 0 ? "-" : std::to_string(layer).c_str());
    for (const std::string& k : kinds) {
      auto it = types.find(k);
      std::printf(" %s |", it == types.end() ? "" : it->second.c_str());
    }
    std::printf("\n");
  }
  std::printf("\n%.1f MiB -> %.1f MiB, %.2f bits per weight over the packed matrices, %d calibration tokens\n",
              double(r.source_bytes) / (1 << 20), double(r.packed_bytes) / (1 << 20), r.bits_per_weight,
              r.calibration_tokens);
  if (r.source_pass_ms > 0)
    std::printf("products of a pass (estimated on this CPU, pass mix %s): %.2f ms -> %.2f ms, %.3f of the source's\n",
                mix_text(r.pass_mix).c_str(), r.source_pass_ms, r.packed_pass_ms, r.packed_pass_ms / r.source_pass_ms);
}

}  // namespace

void add_pack_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "pack", "repack a model under a byte or time budget by measured weight importance (and measured kernel speed)");
  struct Options {
    sw::PackOptions pack;
    double budget_mib = 0;
    std::string pass_mix;
    std::string json;
  };
  auto o = std::make_shared<Options>();
  o->pack.measurements_dir = cache_dir();  // the types' times and the sensitivities, kept between runs
  cmd->add_option("-m,--model", o->pack.model_path, "source GGUF model")->required();
  cmd->add_option("--calibration", o->pack.calibration_path, "plain text the model reads to measure importance")
      ->required();
  cmd->add_option("-o,--out", o->pack.output_path, "packed GGUF model to write")->required();
  cmd->add_option("--bpw", o->pack.bits_per_weight, "budget: mean bits per weight over the packed matrices");
  cmd->add_option("--budget-mib", o->budget_mib, "budget: size of the output's tensors in MiB");
  auto* for_speed = cmd->add_option("--for-speed", o->pack.time_fraction,
                  "budget in time: the products of a pass at most this fraction of the source's (e.g. 0.8), "
                  "in the types this CPU multiplies fastest (timed once, cached)")
      ->check(CLI::Range(0.0, 1.0).description("in (0, 1]"));
  cmd->add_option("--pass-mix", o->pass_mix,
                  "with --for-speed: the passes timed, TOKENS:SHARE,... (default: a tool call's, 1:0.72,2:0.12,3:0.04,4:0.01,8:0.11)")
      ->needs(for_speed);
  cmd->add_option("--uniform", o->pack.uniform_type, "no budget: every matrix this type (e.g. Q3_K), to compare");
  cmd->add_option("--tokens", o->pack.calibration_tokens, "calibration tokens to read")->capture_default_str();
  cmd->add_option("--sensitivity-tokens", o->pack.sensitivity_tokens,
                  "tokens on which the output's sensitivity to each matrix is measured (0: not measured)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->pack.threads, "threads (0: all cores)")->capture_default_str()->check(CLI::Range(0, 1024));
  cmd->add_option("--json", o->json, "write the allocation as JSON to this file");
  cmd->callback([o] {
    o->pack.budget_bytes = uint64_t(o->budget_mib * double(1 << 20));
    if (!o->pass_mix.empty()) o->pack.pass_mix = parse_mix(o->pass_mix);
    ProgressLine progress;
    o->pack.progress = progress.callback();
    sw::PackResult r = sw::pack_model(o->pack);
    print_allocation(r);
    if (!o->json.empty()) write_json_file(o->json, r.to_json());
  });
}

}  // namespace cli
