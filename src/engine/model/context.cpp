#include "engine/model/context.h"

#include <algorithm>
#include <chrono>

namespace sw {

Context::Context(const LoadedModel& model, int context_size, bool unified, int sequences) {
  llama_context_params cp = model.context_params();
  if (context_size < 0) throw Error("the context size must be positive (or 0: the model's own), not " + std::to_string(context_size));
  // llama.cpp reserves an output row per sequence and clamps a batch to the context: a context
  // narrower than the sequences fails its assertion. Such a context holds no prompt anyway, as
  // the caller's check of the prompt's length then says.
  const int cells = context_size == 0 ? 0 : std::max(context_size, sequences);
  cp.n_ctx = uint32_t(cells);
  cp.n_batch = uint32_t(std::max(std::min(cells == 0 ? 512 : cells, 512), sequences));
  cp.n_ubatch = cp.n_batch;
  sequences_ = sequences;
  cp.n_seq_max = uint32_t(sequences);
  cp.kv_unified = unified;
  if (model.streaming) {  // passes wait for weights that are still being read
    cp.cb_eval = &StreamingLoad::gate;
    cp.cb_eval_user_data = model.streaming.get();
  }
  ctx_ = llama_init_from_model(model.model, cp);
  if (!ctx_) throw Error("failed to create a llama.cpp context: " + llama_last_errors());
  n_ctx_ = int(llama_n_ctx(ctx_));
  n_batch_ = int(llama_n_batch(ctx_));
  batch_ = llama_batch_init(n_batch_, 0, sequences);
}

Context::~Context() {
  llama_batch_free(batch_);
  llama_free(ctx_);
}

void Context::check_room(size_t extra) const {
  if (history_.size() + extra > size_t(n_ctx_))
    throw Error("context full: " + std::to_string(history_.size()) + " + " + std::to_string(extra) +
                " tokens exceed the context of " + std::to_string(n_ctx_));
}

void Context::append(const std::vector<llama_token>& tokens, PassCounter& counter, size_t scored) {
  std::vector<bool> kept(tokens.size(), false);
  for (size_t i = tokens.size() - std::min(scored, tokens.size()); i < tokens.size(); ++i) kept[i] = true;
  append(tokens, counter, kept);
}

void Context::append(const std::vector<llama_token>& tokens, PassCounter& counter, const std::vector<bool>& scored) {
  check_room(tokens.size());
  for (size_t start = 0; start < tokens.size(); start += size_t(n_batch_)) {
    size_t count = std::min(tokens.size() - start, size_t(n_batch_));
    std::vector<BatchToken> batch(count);
    for (size_t i = 0; i < count; ++i)
      batch[i] = {tokens[start + i], llama_pos(history_.size() + i), {kMain}, scored[start + i]};
    decode(batch, counter);
  }
}

void Context::decode(const std::vector<BatchToken>& tokens, PassCounter& counter) {
  if (tokens.empty()) return;
  if (tokens.size() > size_t(n_batch_)) throw Error("a pass of " + std::to_string(tokens.size()) +
                                                    " tokens exceeds the batch of " + std::to_string(n_batch_));
  std::vector<llama_token> main_tokens;
  std::vector<int> main_logits;
  int rows = 0;
  batch_.n_tokens = int32_t(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const BatchToken& t = tokens[i];
    batch_.token[i] = t.token;
    batch_.pos[i] = t.pos;
    batch_.n_seq_id[i] = int32_t(t.sequences.size());
    std::copy(t.sequences.begin(), t.sequences.end(), batch_.seq_id[i]);
    batch_.logits[i] = t.logits;
    rows += t.logits ? 1 : 0;
    if (std::find(t.sequences.begin(), t.sequences.end(), kMain) != t.sequences.end()) {
      if (t.pos != llama_pos(history_.size() + main_tokens.size()))
        throw Error("internal: a token of the main sequence is out of order");
      main_tokens.push_back(t.token);
      main_logits.push_back(t.logits ? int(i) : -1);
    }
  }
  check_room(tokens.size());
  if (interrupt_ && interrupt_()) throw Cancelled("the call was cancelled");
  const auto started = std::chrono::steady_clock::now();
  int rc = llama_decode(ctx_, batch_);
  if (rc != 0) throw Error("llama_decode failed (code " + std::to_string(rc) + ") " + llama_last_errors());
  if (observe_) {
    llama_synchronize(ctx_);  // a backend may compute asynchronously
    observe_(int(tokens.size()), rows,
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  }
  last_pass_start_ = history_.size();
  last_pass_logits_ = std::move(main_logits);
  rewound_logits_.clear();
  history_.insert(history_.end(), main_tokens.begin(), main_tokens.end());
  counter.passes += 1;
  counter.tokens += int(tokens.size());
}

const float* Context::logits_after(size_t length) const {
  if (!rewound_logits_.empty() && length == history_.size()) return rewound_logits_.data();
  size_t at = length - 1 - last_pass_start_;
  if (length == 0 || length > history_.size() || length - 1 < last_pass_start_ || at >= last_pass_logits_.size() ||
      last_pass_logits_[at] < 0)
    throw Error("internal: no logits for token " + std::to_string(length) + " of the conversation");
  return llama_get_logits_ith(ctx_, last_pass_logits_[at]);
}

void Context::truncate(size_t length) {
  if (length >= history_.size()) return;
  forget_prompt_logits_beyond(length);
  llama_memory_seq_rm(llama_get_memory(ctx_), kMain, llama_pos(length), -1);
  history_.resize(length);
  if (length <= guess_from_) guess_from_ = kNoGuess;
  rewound_logits_.clear();
}

void Context::rewind(size_t length, std::vector<float> logits) {
  if (length == 0 || length > history_.size()) throw Error("internal: a rewind past the conversation's end");
  truncate(length);
  rewound_logits_ = std::move(logits);
}

const float* Context::logits_at(int index) const { return llama_get_logits_ith(ctx_, index); }

void Context::share_main(llama_seq_id sequence) {
  llama_memory_seq_cp(llama_get_memory(ctx_), kMain, sequence, -1, -1);
}

void Context::adopt(llama_seq_id sequence, const std::vector<llama_token>& tokens) {
  if (tokens.empty()) return;
  llama_pos from = llama_pos(history_.size());
  llama_memory_seq_cp(llama_get_memory(ctx_), sequence, kMain, from, from + llama_pos(tokens.size()));
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  last_pass_logits_.clear();
  rewound_logits_.clear();
}

void Context::drop(llama_seq_id sequence, llama_pos from) {
  llama_memory_seq_rm(llama_get_memory(ctx_), sequence, from, -1);
}

void Context::clear() {
  llama_memory_clear(llama_get_memory(ctx_), true);
  forget_prompt_logits_beyond(0);
  history_.clear();
  guess_from_ = kNoGuess;
  last_pass_logits_.clear();
  rewound_logits_.clear();
}

std::vector<uint8_t> Context::save(size_t length) {
  // A copy of sequence 0's cells, cut to `length`, in the scratch sequence (tags only).
  drop(kScratch);
  share_main(kScratch);
  drop(kScratch, llama_pos(std::min(length, history_.size())));
  std::vector<uint8_t> state(llama_state_seq_get_size(ctx_, kScratch));
  state.resize(llama_state_seq_get_data(ctx_, state.data(), state.size(), kScratch));
  drop(kScratch);
  return state;
}

bool Context::restore(const std::vector<llama_token>& tokens, const std::vector<uint8_t>& state) {
  clear();
  if (tokens.size() > size_t(n_ctx_) || llama_state_seq_set_data(ctx_, state.data(), state.size(), kMain) == 0) {
    clear();
    return false;
  }
  history_ = tokens;
  return true;
}

size_t Context::shared_prefix(const std::vector<llama_token>& tokens) const {
  size_t shared = 0;
  while (shared < history_.size() && shared < tokens.size() && history_[shared] == tokens[shared]) ++shared;
  return shared;
}

int Context::start_from(const std::vector<llama_token>& prompt, PassCounter& counter) {
  size_t shared = shared_prefix(prompt);
  for (llama_seq_id seq = 1; seq < sequences_; ++seq) drop(seq);  // branches an answer left behind
  const bool whole = shared > 0 && shared == prompt.size();
  if (whole && shared == prompt_logits_after_) {
    // The same prompt again: its logits are kept (copied into the rewound buffer, whose
    // storage stays from call to call).
    truncate(shared);
    rewound_logits_ = prompt_logits_;
    guess_from_ = kNoGuess;
    return int(shared);
  }
  if (whole) --shared;  // the last token is fed again for its logits
  forget_prompt_logits_beyond(shared);
  if (!llama_memory_seq_rm(llama_get_memory(ctx_), kMain, llama_pos(shared), -1)) {
    clear();
    shared = 0;
  }
  history_.resize(shared);
  guess_from_ = kNoGuess;
  append(std::vector<llama_token>(prompt.begin() + long(shared), prompt.end()), counter);
  const float* logits = last_logits();
  prompt_logits_.assign(logits, logits + llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx_))));
  prompt_logits_after_ = prompt.size();
  return int(shared);
}

void Context::forget_prompt_logits_beyond(size_t length) {
  if (length >= prompt_logits_after_) return;
  prompt_logits_after_ = 0;
  prompt_logits_.clear();
}

}  // namespace sw
