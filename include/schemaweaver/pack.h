// schemaweaver/pack.h - repack a model: fewer bits where weights matter least (a fast cold
// start), or the types this CPU multiplies fastest where they cost least accuracy (fast passes).
//
//   sw::PackOptions o{"model.gguf", "calibration.txt", "packed.gguf"};
//   o.bits_per_weight = 3.5;              // or o.time_fraction = 0.8 (for speed)
//   sw::PackResult r = sw::pack_model(o);   // r.tensors: the type chosen per matrix
//
// The model reads the calibration text while the mean square of every input channel of every
// weight matrix is gathered (llama.cpp's evaluation callback). For each matrix and each of
// llama.cpp's standard quantization types that fits its rows, the output error that type adds
// is estimated on a sample of rows: the rounding error of each input channel weighted by that
// channel's mean square, relative to the matrix's output. Each matrix's errors are then scaled
// by the output's measured sensitivity to it (the KL divergence its coarsest rounding adds on a
// few calibration tokens, per unit of relative error). Types are chosen under the budget (bytes,
// or measured time) so that the loss added per byte or millisecond saved is smallest, and llama.cpp's own quantizer
// writes the file (with the gathered statistic as its importance matrix), so stock llama.cpp
// runs it. The source may itself be quantized; its weights are dequantized first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schemaweaver/error.h"
#include "schemaweaver/progress.h"

namespace sw {

struct PackOptions {
  std::string model_path;
  std::string calibration_path;   // plain text
  std::string output_path;        // written whole or not at all
  double bits_per_weight = 0;     // budget: mean bits per weight over the packed matrices, or
  uint64_t budget_bytes = 0;      //   the size of all the output's tensors (one of the two)
  std::string uniform_type;       // instead of a budget: every matrix this type ("Q3_K")
  // Instead of bytes, a budget in time (packing for speed): the packed matrices' estimated time
  // in a pass at most this fraction of the source's (e.g. 0.8), with the least added error. Each
  // type's time on each of the model's matrix shapes is measured on this CPU once (cached), over
  // the types llama.cpp multiplies fast (Q4_0, IQ4_NL, Q4_K repacked; Q5_0, Q5_K, Q6_K, Q8_0) and
  // each matrix's own type.
  double time_fraction = 0;
  // The passes that time is estimated on: tokens a pass carries -> share of the passes. Empty:
  // the mix of a tool call (measured on BFCL: mostly one-token passes, some of 2-8 tokens).
  std::map<int, double> pass_mix;
  int calibration_tokens = 4096;
  // Tokens on which the output's sensitivity to each matrix is measured (one pass per matrix;
  // 0: not measured, every matrix's relative error then counts the same).
  int sensitivity_tokens = 128;
  int threads = 0;                // 0: all cores
  // Where the types' times and the sensitivities are kept between runs (measured once per model
  // file and CPU; "" keeps none: measured again each time).
  std::string measurements_dir;
  // Its stages as they go: timing weight types, calibration, choices, sensitivity, writing.
  ProgressCallback progress;
};

struct PackedTensor {
  std::string name;
  int layer = -1;                 // -1: outside the repeated blocks (embeddings, output)
  std::string source_type;
  std::string type;               // chosen
  uint64_t elements = 0;
  uint64_t bytes = 0;             // with the chosen type
  double pass_ms = 0;             // its estimated time in a pass of the mix (packing for speed)
  double error = 0;               // estimated cost of the chosen type (PackResult::error_unit)
};

struct PackResult {
  std::vector<PackedTensor> tensors;  // the packed matrices, in file order
  uint64_t source_bytes = 0;          // all tensors of the source
  uint64_t packed_bytes = 0;          // all tensors of the output
  double bits_per_weight = 0;         // over the packed matrices
  int calibration_tokens = 0;
  // Packing for speed: the matrices' estimated time in a pass of the mix, source and packed
  // (ms; what the time budget is a fraction of), and the mix (tokens -> share).
  double source_pass_ms = 0;
  double packed_pass_ms = 0;
  std::map<int, double> pass_mix;
  // "nats": the KL divergence a matrix's rounding adds to the output (sensitivity measured);
  // "relative": the matrix's relative output error.
  std::string error_unit;
  Json to_json() const;
};

// Throws sw::Error on an unreadable model, an empty calibration text, a budget below the
// smallest (or fastest) packing or an unknown type; no output file is left behind then.
PackResult pack_model(const PackOptions& options);

}  // namespace sw
