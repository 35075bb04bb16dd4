#include "modeltools/output_probe.h"

#include <ggml-backend.h>

#include <algorithm>
#include <cstring>

namespace sw {

OutputProbe::OutputProbe(const LoadedModel& model, const std::vector<llama_token>& tokens)
    : model_(model),
      tokens_(tokens),
      reader_(model, int(std::max<size_t>(tokens.size(), 2)), &note_weights, this) {
  if (tokens.empty()) throw Error("no tokens to probe the model with");
  reader_.read(tokens_, true);
  noting_ = false;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (const float* logits = reader_.prediction_of(i)) {
      reference_.emplace_back();
      log_softmax(logits, size_t(model_.vocab_size()), reference_.back());
    }
  }
}

bool OutputProbe::note_weights(ggml_tensor* node, bool ask, void* self) {
  auto* probe = static_cast<OutputProbe*>(self);
  if (!ask || !probe->noting_) return false;
  for (ggml_tensor* src : node->src) {
    if (src && src->buffer && std::strstr(src->name, ".weight")) probe->weights_.emplace(src->name, src);
  }
  return false;  // no node's data is needed: the pass is not split
}

std::optional<double> OutputProbe::divergence_with(const std::string& tensor,
                                                   const std::vector<char>& changed,
                                                   const std::vector<char>& original) {
  auto found = weights_.find(tensor);
  if (found == weights_.end()) return std::nullopt;
  ggml_tensor* t = found->second;
  if (changed.size() != ggml_nbytes(t) || original.size() != ggml_nbytes(t))
    throw Error("internal: data of the wrong size for tensor '" + tensor + "'");
  ggml_backend_tensor_set(t, changed.data(), 0, changed.size());
  reader_.read(tokens_, true);
  ggml_backend_tensor_set(t, original.data(), 0, original.size());
  double total = 0;
  size_t position = 0;
  std::vector<double> log_p;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (const float* logits = reader_.prediction_of(i)) {
      log_softmax(logits, size_t(model_.vocab_size()), log_p);
      total += kl_divergence(reference_[position++], log_p);
    }
  }
  return position ? total / double(position) : 0.0;
}

}  // namespace sw
