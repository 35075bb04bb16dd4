// `costs`: the measured cost of a forward pass by the tokens it carries (the paper's Table 2).
#include <cstdio>
#include <iostream>

#include "common.h"
#include "schemaweaver/measure.h"

namespace cli {

namespace {

void print_speed(const sw::Model& model, int prefill, int decode, int rounds, bool json) {
  sw::Speed speed = sw::measure_speed(model, prefill, decode, rounds);
  sw::ModelInfo info = model.info();
  if (json) {
    std::cout << sw::Json{{"model", info.path}, {"threads", info.threads}, {"weight_bytes", info.weight_bytes},
                          {"parameters", info.parameters}, {"rounds", rounds}, {"prompt_tokens", speed.prompt_tokens},
                          {"decode_tokens", speed.decode_tokens}, {"prefill_ms", speed.prefill_ms},
                          {"decode_ms_per_token", speed.decode_ms_per_token}}
                     .dump(2)
              << "\n";
    return;
  }
  std::printf("model %s, %d thread(s), median of %d rounds: prompt of %d tokens read in %.1f ms (%.1f tokens/s), "
              "then %.2f ms per decoded token (%.1f tokens/s)\n",
              info.name.c_str(), info.threads, rounds, speed.prompt_tokens, speed.prefill_ms,
              1000.0 * speed.prompt_tokens / speed.prefill_ms, speed.decode_ms_per_token,
              1000.0 / speed.decode_ms_per_token);
}

}  // namespace

void add_costs_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("costs", "measure the time of a pass carrying 1..N tokens on this machine, keeping the logits of one or of all");
  struct Options {
    ModelOptions model;
    int max_tokens = 8;
    int rounds = 9;
    int prefill = 0;
    int decode = 32;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  o->model.add_to(*cmd);
  cmd->add_option("-n,--max-tokens", o->max_tokens, "largest pass, in tokens")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "interleaved rounds (the median is taken)")->capture_default_str();
  cmd->add_option("--prefill", o->prefill,
                  "instead: the time to read a prompt of this many tokens, then to decode --decode tokens")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--decode", o->decode, "tokens decoded after the prompt (with --prefill)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] {
    auto model = sw::Model::load(o->model.params);
    if (o->prefill > 0) return print_speed(*model, o->prefill, o->decode, o->rounds, o->json);
    const sw::PassCostTable table = sw::measure_pass_costs(*model, o->max_tokens, o->rounds);
    const std::vector<double>& ms = table.one_row_ms;
    sw::ModelInfo info = model->info();
    if (o->json) {
      std::cout << sw::Json{{"model", info.path},
                            {"model_name", info.name},
                            {"threads", info.threads},
                            {"weight_bytes", info.weight_bytes},
                            {"rounds", o->rounds},
                            {"pass_ms_by_tokens", ms},
                            {"pass_ms_keeping_every_row", table.all_rows_ms},
                            {"ms_per_kept_row", table.ms_per_kept_row}}
                       .dump(2)
              << "\n";
      return;
    }
    std::printf("model %s, %d thread(s), median of %d rounds\n"
                "| tokens | pass (ms) | vs 1 token | keeping every row's logits (ms) |\n|---|---|---|---|\n",
                info.name.c_str(), info.threads, o->rounds);
    for (size_t n = 0; n < ms.size(); ++n)
      std::printf("| %zu | %.2f | %.2fx | %.2f |\n", n + 1, ms[n], ms[n] / ms[0], table.all_rows_ms[n]);
    std::printf("each kept row of logits beyond the first adds %.2f ms\n", table.ms_per_kept_row);
  });
}

}  // namespace cli
