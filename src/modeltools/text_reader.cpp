#include "modeltools/text_reader.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

namespace sw {

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot read the " + what + " '" + path + "'");
  std::string text(std::istreambuf_iterator<char>(file), {});
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error("the " + what + " '" + path + "' is empty");
  return text;
}

void log_softmax(const float* logits, size_t n, std::vector<double>& out) {
  out.resize(n);
  const double top = *std::max_element(logits, logits + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - top);
  const double log_sum = top + std::log(sum);
  for (size_t i = 0; i < n; ++i) out[i] = double(logits[i]) - log_sum;
}

double kl_divergence(const std::vector<double>& reference, const std::vector<double>& other) {
  double divergence = 0;
  for (size_t i = 0; i < reference.size(); ++i)
    divergence += std::exp(reference[i]) * (reference[i] - other[i]);
  return divergence;
}

WindowReader::WindowReader(const LoadedModel& model, int window, ggml_backend_sched_eval_callback observe,
                           void* observer)
    : bos_(llama_vocab_bos(model.vocab)), window_(window) {
  llama_context_params cp = model.context_params();
  cp.n_ctx = uint32_t(window + 1);
  cp.n_batch = cp.n_ubatch = uint32_t(window + 1);
  cp.cb_eval = observe;
  cp.cb_eval_user_data = observer;
  ctx_ = llama_init_from_model(model.model, cp);
  if (!ctx_) throw Error("failed to create a llama.cpp context: " + llama_last_errors());
  batch_ = llama_batch_init(window + 1, 0, 1);
}

WindowReader::~WindowReader() {
  llama_batch_free(batch_);
  llama_free(ctx_);
}

std::vector<std::vector<llama_token>> WindowReader::split(const std::vector<llama_token>& tokens,
                                                          int window) {
  std::vector<std::vector<llama_token>> windows;
  for (size_t start = 0; start < tokens.size(); start += size_t(window))
    windows.emplace_back(tokens.begin() + long(start),
                         tokens.begin() + long(std::min(tokens.size(), start + size_t(window))));
  return windows;
}

void WindowReader::read(const std::vector<llama_token>& tokens, bool predictions) {
  if (tokens.empty() || int(tokens.size()) > window_)
    throw Error("a window holds 1 to " + std::to_string(window_) + " tokens");
  llama_memory_clear(llama_get_memory(ctx_), true);
  batch_.n_tokens = 0;
  auto push = [&](llama_token token, bool logits) {
    int i = batch_.n_tokens++;
    batch_.token[i] = token;
    batch_.pos[i] = i;
    batch_.n_seq_id[i] = 1;
    batch_.seq_id[i][0] = 0;
    batch_.logits[i] = logits;
  };
  const bool has_bos = bos_ != LLAMA_TOKEN_NULL;
  if (has_bos) push(bos_, predictions);
  for (size_t i = 0; i < tokens.size(); ++i) push(tokens[i], predictions && i + 1 < tokens.size());
  batch_.logits[batch_.n_tokens - 1] = true;  // the last token's logits: needed to end the pass
  int rc = llama_decode(ctx_, batch_);
  if (rc != 0) throw Error("llama_decode failed while reading a text (code " + std::to_string(rc) + ")");
  kept_.assign(size_t(batch_.n_tokens), false);
  for (int i = 0; i < batch_.n_tokens; ++i) kept_[size_t(i)] = batch_.logits[i];
}

const float* WindowReader::prediction_of(size_t i) const {
  // Batch index of the token before token i: BOS at 0 shifts the text by one.
  const bool has_bos = bos_ != LLAMA_TOKEN_NULL;
  if (!has_bos && i == 0) return nullptr;
  const size_t before = has_bos ? i : i - 1;
  if (before >= kept_.size() || !kept_[before]) return nullptr;
  return llama_get_logits_ith(ctx_, int(before));
}

}  // namespace sw
