// `quality`: how far a packed or pruned model is from its source on a text - perplexity of
// both, the mean KL divergence of their next-token distributions, top-1 agreement.
#include "schemaweaver/quality.h"

#include <cstdio>

#include "common.h"
#include "progress_line.h"

namespace cli {

void add_quality_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("quality", "compare a model's next-token distributions with its source's on a text");
  struct Options {
    sw::QualityOptions quality;
    std::string json;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("-m,--model", o->quality.model_path, "the GGUF model measured")->required();
  cmd->add_option("--reference", o->quality.reference_path, "its source GGUF model")->required();
  cmd->add_option("--text", o->quality.text_path, "plain text both models read")->required();
  cmd->add_option("--tokens", o->quality.max_tokens, "tokens of the text to read")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--window", o->quality.window, "tokens per window (each from an empty cache)")
      ->check(CLI::Range(2, 8192))
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->quality.threads, "threads (0: all cores)")->capture_default_str()->check(CLI::Range(0, 1024));
  cmd->add_option("--json", o->json, "write the result as JSON to this file");
  cmd->callback([o] {
    ProgressLine progress("windows");
    o->quality.progress = progress.callback();
    sw::QualityReport r = sw::compare_to_reference(o->quality);
    std::printf(
        "%d positions: perplexity %.4f (reference %.4f, %+.2f %%), KL divergence %.5f nats, top-1 agreement "
        "%.2f %%\n",
        r.tokens, r.perplexity, r.reference_perplexity, 100.0 * (r.perplexity / r.reference_perplexity - 1.0),
        r.kl_divergence, 100.0 * r.top1_agreement);
    if (!o->json.empty()) write_json_file(o->json, r.to_json());
  });
}

}  // namespace cli
