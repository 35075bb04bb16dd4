// How much each weight matrix's input channels carry on real text: the mean square of the
// activations that enter the matrix, per input channel (an importance-matrix statistic),
// gathered through llama.cpp's evaluation callback while the model reads a calibration text.
// A matrix's output error from rounding its weights is the rounding error of each input
// channel weighted by this statistic, so it says where fewer bits cost least.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "schemaweaver/progress.h"

namespace sw {

struct ChannelImportance {
  std::vector<float> mean_square;  // per input channel (the matrix's row length)
  int64_t rows = 0;                // activation rows (tokens) seen
};

// Keyed by weight tensor name ("blk.0.ffn_down.weight").
using ImportanceMap = std::map<std::string, ChannelImportance>;

struct Calibration {
  ImportanceMap importance;
  int tokens = 0;  // calibration tokens the model read
};

// Runs the model over `text` (its first `max_tokens` tokens, in windows of `window` tokens,
// each read from an empty cache) and gathers the statistic for every weight matrix that
// multiplies activations; each window read is reported to `progress` ("calibration"). Throws
// Error if the text holds no tokens.
Calibration measure_importance(const LoadedModel& model, const std::string& text, int max_tokens,
                               const ProgressCallback& progress = {}, int window = 512);

}  // namespace sw
