// `costs`: the measured cost of a forward pass by the tokens it carries (the paper's Table 2).
#include <cstdio>
#include <iostream>

#include "common.h"

namespace cli {

void add_costs_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("costs", "measure the time of a pass carrying 1..N tokens on this machine");
  struct Options {
    ModelOptions model;
    int max_tokens = 8;
    int rounds = 9;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  o->model.add_to(*cmd);
  cmd->add_option("-n,--max-tokens", o->max_tokens, "largest pass, in tokens")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "interleaved rounds (the median is taken)")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] {
    auto model = sw::Model::load(o->model.params);
    std::vector<double> ms = sw::measure_pass_costs(*model, o->max_tokens, o->rounds);
    sw::ModelInfo info = model->info();
    if (o->json) {
      std::cout << sw::Json{{"model", info.path}, {"model_name", info.name}, {"threads", info.threads},
                            {"weight_bytes", info.weight_bytes}, {"rounds", o->rounds}, {"pass_ms_by_tokens", ms}}
                       .dump(2)
                << "\n";
      return;
    }
    std::printf("model %s, %d thread(s), median of %d rounds\n| tokens | pass (ms) | vs 1 token |\n|---|---|---|\n",
                info.name.c_str(), info.threads, o->rounds);
    for (size_t n = 0; n < ms.size(); ++n) std::printf("| %zu | %.2f | %.2fx |\n", n + 1, ms[n], ms[n] / ms[0]);
  });
}

}  // namespace cli
