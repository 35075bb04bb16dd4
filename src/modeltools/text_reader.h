// Reads a long text through a model in windows, each from an empty cache behind the BOS token
// (where the model has one): the pass behind statistics over a text - the importance that
// `pack` gathers, the perplexity and divergence that `quality` measures.
#pragma once

#include <llama.h>

#include <string>
#include <vector>

#include "engine/model/model.h"

namespace sw {

// A plain text file whole; `what` names it in errors ("calibration text"). Throws Error if it
// cannot be read or holds only white space.
std::string read_text(const std::string& path, const std::string& what);

// log-softmax of a vocabulary's logits, in doubles (differences of near-equal probabilities).
void log_softmax(const float* logits, size_t n, std::vector<double>& out);
// KL(reference || other) of two distributions given as log-probabilities, in nats.
double kl_divergence(const std::vector<double>& reference, const std::vector<double>& other);

class WindowReader {
 public:
  // `observe` (may be null) is llama.cpp's evaluation callback, called for every node of every
  // pass with `observer`. Throws Error if no context can be made.
  WindowReader(const LoadedModel& model, int window, ggml_backend_sched_eval_callback observe = nullptr,
               void* observer = nullptr);
  ~WindowReader();
  WindowReader(const WindowReader&) = delete;
  WindowReader& operator=(const WindowReader&) = delete;

  int window() const { return window_; }
  // Splits tokens into windows of at most window() tokens.
  static std::vector<std::vector<llama_token>> split(const std::vector<llama_token>& tokens, int window);
  // Reads one window (at most window() tokens). With `predictions`, keeps the logits that
  // predict each of its tokens (all but the first, which has none unless the model has a BOS
  // token); else only the last. Throws Error if the pass fails.
  void read(const std::vector<llama_token>& tokens, bool predictions);
  // Vocabulary-sized logits predicting token `i` of the last window; null if none were kept.
  const float* prediction_of(size_t i) const;

 private:
  llama_context* ctx_ = nullptr;
  llama_batch batch_{};
  llama_token bos_ = LLAMA_TOKEN_NULL;
  int window_ = 0;
  std::vector<bool> kept_;  // per batch index of the last pass: logits kept
};

}  // namespace sw
