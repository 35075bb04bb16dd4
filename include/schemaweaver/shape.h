// schemaweaver/shape.h - a pretrained model pruned into a faster shape, without retraining.
//
//   sw::ShapeOptions o{"model.gguf", "calibration.txt", "shaped.gguf"};
//   o.shape = sw::parse_shape("layers=0-9,12,15 ffn=4096 skip-attention=6,8");
//   sw::ShapeResult r = sw::shape_model(o);   // r.parameters, r.bytes
//
// A candidate keeps some of the source's layers (in order), narrows the FFN of each kept layer
// to the channels that carry most (the mean square of the channel's activation on a calibration
// text times the energy of its output weights), and may skip attention in chosen layers (their
// MLP is kept). The result is written in llama.cpp's "deci" architecture, which stock llama.cpp
// runs with a head count and an FFN width per layer and attention-free layers; the weights keep
// their types (an FFN down projection, cut across its rows, is quantized again to its own type
// with the statistic as the quantizer's importance matrix). Sources: the llama and qwen2
// architectures (qwen2's rotary layout is permuted into llama's).
//
// A narrower model width keeps the residual channels that the norms' outputs carry most on the
// calibration text (in every matrix that reads them), cuts every matrix and norm to them, and
// scales each RMS norm by the measured ratio of the kept channels' RMS to all channels', so the
// normalised activations keep their scale. Without retraining this costs far more quality than
// the other edits; it is there so that the search can weigh it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schemaweaver/error.h"
#include "schemaweaver/progress.h"

namespace sw {

struct ShapeSpec {
  std::vector<int> layers;          // source layers kept, ascending (empty: all)
  std::vector<int> ffn;             // FFN width per kept layer; one value: every kept layer;
                                    // empty: the source's
  std::vector<int> skip_attention;  // source layers (kept ones) whose attention is skipped
  int width = 0;                    // model width (embedding length); 0: the source's
};

// "layers=0-9,12 ffn=4096 skip-attention=5,7 width=512" (every part optional). Throws Error.
ShapeSpec parse_shape(const std::string& text);

struct ShapeOptions {
  std::string model_path;
  std::string calibration_path;  // plain text; read only when an FFN is narrowed
  std::string output_path;       // written whole or not at all
  ShapeSpec shape;
  int calibration_tokens = 2048;
  int threads = 0;  // 0: all cores
  ProgressCallback progress;  // its stages as they go: calibration, writing
};

struct ShapeResult {
  std::string source_architecture;
  int source_layers = 0;
  int source_ffn = 0;
  int source_embedding = 0;
  std::vector<int> layers;            // source index of each kept layer
  std::vector<int> ffn;               // FFN width per kept layer
  std::vector<bool> attention;        // per kept layer
  int embedding = 0;                  // model width
  int heads = 0, head_dim = 0;        // of a layer with attention
  uint64_t parameters = 0;            // of the written model
  uint64_t embedding_parameters = 0;  // of which the token embedding table
  uint64_t bytes = 0;                 // of its tensors
  std::string describe() const;       // "12 of 24 layers, FFN 4096/8960, attention skipped in 2 layers"
  Json to_json() const;
};

// Throws sw::Error on an unreadable model, an architecture that cannot be shaped this way, or
// an impossible shape (a layer out of range, no layer kept, attention skipped in the first kept
// layer, an FFN width that is not a whole number of the down projection's blocks or exceeds the
// source's, a model width that is not a multiple of 32 or exceeds the source's); no output file
// is left behind then.
ShapeResult shape_model(const ShapeOptions& options);

}  // namespace sw
