// `pack`: a model repacked under a byte budget, fewer bits where the weights matter least
// (measured on a calibration text), written as a GGUF file that stock llama.cpp runs.
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "common.h"
#include "schemaweaver/pack.h"

namespace cli {
namespace {

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
}

}  // namespace

void add_pack_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("pack", "repack a model under a byte budget by measured weight importance");
  struct Options {
    sw::PackOptions pack;
    double budget_mib = 0;
    std::string json;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("-m,--model", o->pack.model_path, "source GGUF model")->required();
  cmd->add_option("--calibration", o->pack.calibration_path, "plain text the model reads to measure importance")
      ->required();
  cmd->add_option("-o,--out", o->pack.output_path, "packed GGUF model to write")->required();
  cmd->add_option("--bpw", o->pack.bits_per_weight, "budget: mean bits per weight over the packed matrices");
  cmd->add_option("--budget-mib", o->budget_mib, "budget: size of the output's tensors in MiB");
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
    sw::PackResult r = sw::pack_model(o->pack);
    print_allocation(r);
    if (!o->json.empty()) write_json_file(o->json, r.to_json());
  });
}

}  // namespace cli
