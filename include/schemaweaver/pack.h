// schemaweaver/pack.h - pack a model for a fast cold start: fewer bits where weights matter least.
//
//   sw::PackOptions o{"model.gguf", "calibration.txt", "packed.gguf"};
//   o.bits_per_weight = 3.5;
//   sw::PackResult r = sw::pack_model(o);   // r.tensors: the type chosen per matrix
//
// The model reads the calibration text while the mean square of every input channel of every
// weight matrix is gathered (llama.cpp's evaluation callback). For each matrix and each of
// llama.cpp's standard quantization types that fits its rows, the output error that type adds
// is estimated on a sample of rows: the rounding error of each input channel weighted by that
// channel's mean square, relative to the matrix's output. Each matrix's errors are then scaled
// by the output's measured sensitivity to it (the KL divergence its coarsest rounding adds on a
// few calibration tokens, per unit of relative error). Types are chosen under the byte budget
// so that the loss added per byte saved is smallest, and llama.cpp's own quantizer
// writes the file (with the gathered statistic as its importance matrix), so stock llama.cpp
// runs it. The source may itself be quantized; its weights are dequantized first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schemaweaver/error.h"

namespace sw {

struct PackOptions {
  std::string model_path;
  std::string calibration_path;   // plain text
  std::string output_path;        // written whole or not at all
  double bits_per_weight = 0;     // budget: mean bits per weight over the packed matrices, or
  uint64_t budget_bytes = 0;      //   the size of all the output's tensors (one of the two)
  std::string uniform_type;       // instead of a budget: every matrix this type ("Q3_K")
  int calibration_tokens = 4096;
  // Tokens on which the output's sensitivity to each matrix is measured (one pass per matrix;
  // 0: not measured, every matrix's relative error then counts the same).
  int sensitivity_tokens = 128;
  int threads = 0;                // 0: all cores
};

struct PackedTensor {
  std::string name;
  int layer = -1;                 // -1: outside the repeated blocks (embeddings, output)
  std::string source_type;
  std::string type;               // chosen
  uint64_t elements = 0;
  uint64_t bytes = 0;             // with the chosen type
  double error = 0;               // estimated cost of the chosen type (PackResult::error_unit)
};

struct PackResult {
  std::vector<PackedTensor> tensors;  // the packed matrices, in file order
  uint64_t source_bytes = 0;          // all tensors of the source
  uint64_t packed_bytes = 0;          // all tensors of the output
  double bits_per_weight = 0;         // over the packed matrices
  int calibration_tokens = 0;
  // "nats": the KL divergence a matrix's rounding adds to the output (sensitivity measured);
  // "relative": the matrix's relative output error.
  std::string error_unit;
  Json to_json() const;
};

// Throws sw::Error on an unreadable model, an empty calibration text, a budget below the
// smallest packing or an unknown type; no output file is left behind then.
PackResult pack_model(const PackOptions& options);

}  // namespace sw
