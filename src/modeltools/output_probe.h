// How far the model's next-token distributions move when one weight tensor's data is replaced:
// the sensitivity of the output to that tensor, measured on a few calibration tokens.
#pragma once

#include <llama.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "modeltools/text_reader.h"

namespace sw {

class OutputProbe {
 public:
  // Reads `tokens` (one window) with the model as loaded, keeping its distributions at every
  // position and noting the weight tensors the pass reads. The model must be loaded without
  // mmap (its tensors are written). Throws Error if the tokens are empty or the pass fails.
  OutputProbe(const LoadedModel& model, const std::vector<llama_token>& tokens);

  // Puts `changed` (the tensor's type and size) in place of the named tensor's data, reads the
  // tokens again, puts `original` back, and returns the mean KL(as loaded || changed) in nats;
  // nullopt if no pass reads that tensor.
  std::optional<double> divergence_with(const std::string& tensor, const std::vector<char>& changed,
                                        const std::vector<char>& original);

 private:
  static bool note_weights(ggml_tensor* node, bool ask, void* self);

  const LoadedModel& model_;
  std::vector<llama_token> tokens_;
  bool noting_ = true;
  std::map<std::string, ggml_tensor*> weights_;
  WindowReader reader_;
  std::vector<std::vector<double>> reference_;  // log-probabilities per predicted position
};

}  // namespace sw
