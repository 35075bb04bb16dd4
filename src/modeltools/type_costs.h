// The time one weight matrix's multiplication takes on this machine, by the matrix's weight type
// and shape and by the tokens the pass carries.
//
// Why measured and not derived from bytes: a one-token pass streams the weights from memory, so
// fewer bytes are faster there, but from a few tokens on a pass is bound by arithmetic, where the
// kernels decide: llama.cpp repacks some types into interleaved layouts (Q4_0, IQ4_NL, Q4_K on
// AVX2) that multiply several tokens at once, and runs others (Q6_K on x86) row by row. Each type
// of each distinct shape is timed in llama.cpp's own CPU backend, the weights placed where
// llama.cpp places them (its repacked buffer when that kernel exists for the type here), in a
// working set twice the last-level cache, so that a one-token product reads memory as a real pass
// does rather than cache.
#pragma once

#include <ggml.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schemaweaver/error.h"
#include "schemaweaver/progress.h"

namespace sw {

struct MatrixShape {
  int64_t row = 0;          // weights per row: the width of the input
  int64_t rows = 0;         // the width of the output
  bool repackable = true;   // false: the token embeddings, which llama.cpp keeps for lookups (and
                            // multiplies in place when the output shares them)
  bool operator<(const MatrixShape& other) const;
};

struct TypeCostTable {
  std::vector<int> tokens;                         // the pass sizes timed, ascending
  std::map<std::string, std::vector<double>> ms;   // by key(), one median per pass size

  static std::string key(ggml_type type, const MatrixShape& shape);
  // The time of one multiplication carrying tokens[index] tokens; throws if it was not timed.
  double cost(ggml_type type, const MatrixShape& shape, size_t index) const;
  Json to_json() const;
};
void from_json(const Json& json, TypeCostTable& table);  // what to_json wrote

// Times every type of `types` that fits each shape (rows whole blocks of the type) at every pass
// size in `tokens`, on `threads` threads (0: all cores); medians of `rounds` after a warm-up.
// Each timed type is reported to `progress` ("timing weight types").
TypeCostTable measure_type_costs(const std::vector<ggml_type>& types, const std::vector<MatrixShape>& shapes,
                                 const std::vector<int>& tokens, int threads, int rounds = 5,
                                 const ProgressCallback& progress = {});

// The same, kept in the measurement cache of `model_path` (keyed by CPU, build, threads, types,
// shapes and pass sizes): measured once per machine.
TypeCostTable cached_type_costs(const std::string& measurements_dir, const std::string& model_path,
                                const std::vector<ggml_type>& types,
                                const std::vector<MatrixShape>& shapes, const std::vector<int>& tokens,
                                int threads, const ProgressCallback& progress = {});

}  // namespace sw
