// schemaweaver/measure.h - measurements of a model on this machine, for benchmarks and for the
// CLI's `costs` and `info`. Not needed to make calls: sessions measure what they need themselves.
#pragma once

#include <vector>

#include "schemaweaver/engine.h"

namespace sw {

// What a forward pass costs on this machine: the median time (ms) of a pass carrying n =
// 1..max_tokens tokens after a 256-token context, keeping the logits of its last token (a
// prompt's or a forced text's pass), and of the same passes keeping the logits of every token
// (a pass of branches or of drafts: the output layer multiplies each kept row by the whole
// vocabulary, most of a small model's work where the vocabulary is large).
struct PassCostTable {
  std::vector<double> one_row_ms;   // [n - 1]: n tokens, the last one's logits kept
  std::vector<double> all_rows_ms;  // [n - 1]: n tokens, every one's logits kept
  double ms_per_kept_row = 0;       // what a kept row adds, from the two (median over n >= 2)
};
// Measured now over `rounds` interleaved rounds. Sessions plan SchemaWeaver's steps and size
// padding and speculative drafts by what their own passes cost, learnt as they run and kept
// between runs; this measurement is added to what they have learnt.
PassCostTable measure_pass_costs(const Model& model, int max_tokens = 8, int rounds = 9);

// How fast the model reads a prompt and writes an answer on this machine (llama-bench's pp and
// tg): medians over `rounds`, each from an empty cache.
struct Speed {
  int prompt_tokens = 0;
  int decode_tokens = 0;
  double prefill_ms = 0;           // reading the prompt (passes of up to 512 tokens)
  double decode_ms_per_token = 0;  // then one token per pass, after the prompt
};
Speed measure_speed(const Model& model, int prompt_tokens = 1024, int decode_tokens = 32, int rounds = 3);

}  // namespace sw
