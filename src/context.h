// One llama_context and the bookkeeping of every forward pass it runs.
#pragma once

#include <vector>

#include <llama.h>

#include "model.h"

namespace sw {

// Counts of forward passes (llama_decode calls) and the tokens they carried.
struct PassCounter {
  int passes = 0;
  int tokens = 0;
};

class Context {
 public:
  Context(const Model::Impl& model, int context_size);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Appends tokens to sequence 0 after what it holds, in passes of at most n_batch tokens,
  // keeping the logits of the last token. Throws Error if the context is full.
  void append(const std::vector<llama_token>& tokens, PassCounter& counter);
  // Makes the context hold exactly `prompt`, keeping the cached prefix it shares with what the
  // context holds now (a repeated system prompt and tool list is not computed again). At least
  // the last token is recomputed, for its logits. Returns the number of tokens reused.
  int start_from(const std::vector<llama_token>& prompt, PassCounter& counter);
  // Logits of the last appended token: vocab_size floats.
  const float* last_logits() const;
  void clear();
  int size() const { return n_ctx_; }
  int used() const { return int(history_.size()); }

 private:
  llama_context* ctx_ = nullptr;
  llama_batch batch_{};
  int n_ctx_ = 0;
  int n_batch_ = 0;
  std::vector<llama_token> history_;  // tokens in the KV cache, in position order
  int last_index_ = -1;
};

}  // namespace sw
