#include "context.h"

#include <algorithm>

namespace sw {

Context::Context(const Model::Impl& model, int context_size) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(context_size);
  cp.n_batch = uint32_t(std::min(context_size, 512));
  cp.n_ubatch = cp.n_batch;
  cp.n_seq_max = 1;
  cp.n_threads = model.threads;
  cp.n_threads_batch = model.threads;
  cp.no_perf = true;
  ctx_ = llama_init_from_model(model.model, cp);
  if (!ctx_) throw Error("failed to create a llama.cpp context: " + llama_last_errors());
  n_ctx_ = int(llama_n_ctx(ctx_));
  n_batch_ = int(llama_n_batch(ctx_));
  batch_ = llama_batch_init(n_batch_, 0, 1);
}

Context::~Context() {
  llama_batch_free(batch_);
  llama_free(ctx_);
}

void Context::append(const std::vector<llama_token>& tokens, PassCounter& counter) {
  if (history_.size() + tokens.size() > size_t(n_ctx_))
    throw Error("context full: " + std::to_string(history_.size()) + " + " + std::to_string(tokens.size()) +
                " tokens exceed the context of " + std::to_string(n_ctx_));
  for (size_t start = 0; start < tokens.size(); start += size_t(n_batch_)) {
    size_t count = std::min(tokens.size() - start, size_t(n_batch_));
    batch_.n_tokens = int32_t(count);
    for (size_t i = 0; i < count; ++i) {
      batch_.token[i] = tokens[start + i];
      batch_.pos[i] = llama_pos(history_.size() + i);
      batch_.n_seq_id[i] = 1;
      batch_.seq_id[i][0] = 0;
      batch_.logits[i] = i + 1 == count;
    }
    int rc = llama_decode(ctx_, batch_);
    if (rc != 0) throw Error("llama_decode failed (code " + std::to_string(rc) + ")");
    history_.insert(history_.end(), tokens.begin() + long(start), tokens.begin() + long(start + count));
    last_index_ = int(count) - 1;
    counter.passes += 1;
    counter.tokens += int(count);
  }
}

const float* Context::last_logits() const { return llama_get_logits_ith(ctx_, last_index_); }

void Context::clear() {
  llama_memory_clear(llama_get_memory(ctx_), true);
  history_.clear();
  last_index_ = -1;
}

int Context::start_from(const std::vector<llama_token>& prompt, PassCounter& counter) {
  size_t shared = 0;
  while (shared < history_.size() && shared < prompt.size() && history_[shared] == prompt[shared]) ++shared;
  if (shared == prompt.size() && shared > 0) --shared;  // the last token is fed again for its logits
  if (!llama_memory_seq_rm(llama_get_memory(ctx_), 0, llama_pos(shared), -1)) {
    clear();
    shared = 0;
  }
  history_.resize(shared);
  append(std::vector<llama_token>(prompt.begin() + long(shared), prompt.end()), counter);
  return int(shared);
}

}  // namespace sw
