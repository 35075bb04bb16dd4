// `shape`: a pretrained model pruned into a faster shape (fewer layers, narrower FFNs, layers
// without attention, a narrower model), written as a GGUF file that stock llama.cpp runs.
#include "schemaweaver/shape.h"

#include <cstdio>

#include "common.h"
#include "progress_line.h"

namespace cli {

void add_shape_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("shape", "prune a model into a faster shape (no retraining)");
  struct Options {
    sw::ShapeOptions shape;
    std::string layers, ffn, skip_attention, width, json;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("-m,--model", o->shape.model_path, "source GGUF model (llama or qwen2 architecture)")
      ->required();
  cmd->add_option("-o,--out", o->shape.output_path, "shaped GGUF model to write")->required();
  cmd->add_option("--layers", o->layers, "source layers kept, e.g. 0-9,12,15 (default: all)");
  cmd->add_option("--ffn", o->ffn,
                  "FFN width: one for every kept layer, or one per kept layer (default: the source's)");
  cmd->add_option("--skip-attention", o->skip_attention,
                  "source layers whose attention is skipped, e.g. 5,9");
  cmd->add_option("--width", o->width, "model width, a multiple of 32 (default: the source's)");
  cmd->add_option("--calibration", o->shape.calibration_path,
                  "plain text on which channels are ranked (needed for a narrower FFN or width)");
  cmd->add_option("--tokens", o->shape.calibration_tokens, "calibration tokens to read")
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->shape.threads, "threads (0: all cores)")->capture_default_str()->check(CLI::Range(0, 1024));
  cmd->add_option("--json", o->json, "write the shape as JSON to this file");
  cmd->callback([o] {
    std::string spec;
    if (!o->layers.empty()) spec += " layers=" + o->layers;
    if (!o->ffn.empty()) spec += " ffn=" + o->ffn;
    if (!o->skip_attention.empty()) spec += " skip-attention=" + o->skip_attention;
    if (!o->width.empty()) spec += " width=" + o->width;
    o->shape.shape = sw::parse_shape(spec);
    ProgressLine progress;
    o->shape.progress = progress.callback();
    sw::ShapeResult r = sw::shape_model(o->shape);
    std::printf("%s: %.1f M parameters, %.1f MiB of tensors\n", r.describe().c_str(),
                double(r.parameters) / 1e6, double(r.bytes) / (1 << 20));
    if (!o->json.empty()) write_json_file(o->json, r.to_json());
  });
}

}  // namespace cli
