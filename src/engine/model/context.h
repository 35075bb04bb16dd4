// One llama_context and the bookkeeping of every forward pass it runs.
//
// Sequence 0 is the conversation. Other sequences are short-lived branches that share cells of
// sequence 0 (SchemaWeaver's value branches) and a scratch sequence for placeholder tokens.
// The KV cache is unified (kv_unified): all sequences live in one buffer, so sharing a prefix
// with a branch only tags its cells and branches of different lengths go through one pass.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include <llama.h>

#include "engine/model/model.h"

namespace sw {

// Counts of forward passes (llama_decode calls) and the tokens they carried.
struct PassCounter {
  int passes = 0;
  int tokens = 0;
};

// One token of a batch: its position, the sequences it belongs to, whether its logits are kept.
struct BatchToken {
  llama_token token = 0;
  llama_pos pos = 0;
  std::vector<llama_seq_id> sequences;
  bool logits = false;
};

class Context {
 public:
  static constexpr llama_seq_id kMain = 0;
  static constexpr int kSequences = 64;  // sequence 0, branches, and the scratch sequence
  static constexpr llama_seq_id kScratch = kSequences - 1;
  static constexpr int kMaxBranches = kSequences - 2;

  // `unified` false gives each of `sequences` sequences its own slice of the cache (llama.cpp's
  // default), for measuring what sharing costs there; the engine uses the unified cache.
  Context(const LoadedModel& model, int context_size, bool unified = true, int sequences = kSequences);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Appends tokens to sequence 0 after what it holds, in passes of at most n_batch tokens,
  // keeping the logits of the last `scored` tokens (a speculative draft is scored whole).
  // Throws Error if the context is full.
  void append(const std::vector<llama_token>& tokens, PassCounter& counter, size_t scored = 1);
  // The same, keeping the logits of the tokens marked in `scored` (one flag per token). Only
  // the last pass's logits stay readable, so a caller that needs them all keeps the tokens
  // within one batch.
  void append(const std::vector<llama_token>& tokens, PassCounter& counter, const std::vector<bool>& scored);
  // Makes the context hold exactly `prompt`, keeping the cached prefix it shares with what the
  // context holds now (a repeated system prompt and tool list is not computed again). The last
  // token is recomputed for its logits, unless the context holds the whole prompt and the logits
  // the last start_from left after it: then nothing is computed, and a repeated prompt continues
  // bit for bit as it did before (a pass of one token rounds otherwise than the batch that
  // computed the prompt). Returns the number of tokens reused.
  int start_from(const std::vector<llama_token>& prompt, PassCounter& counter);
  // How many tokens at the start of `tokens` sequence 0 holds already.
  size_t shared_prefix(const std::vector<llama_token>& tokens) const;
  // Logits of the last token appended to sequence 0: vocab_size floats.
  const float* last_logits() const { return logits_after(history_.size()); }
  // Logits of the token at position `length - 1` of sequence 0; the last pass must have kept
  // them.
  const float* logits_after(size_t length) const;
  // Removes the tokens of sequence 0 from position `length` on (a draft that was not taken).
  void truncate(size_t length);

  // The end of sequence 0 may be a guess of how the answer goes on, computed with its logits
  // kept but not yet checked against the model's choices (a speculative draft, SchemaWeaver's
  // guess of the next call): the tokens from position `from` on. `from` = used() marks none.
  // Removing tokens removes the guess from the end first; the decode loop checks a guess it
  // finds and leaves what it did not reach (generate()).
  void mark_guess(size_t from) { guess_from_ = from < history_.size() ? from : kNoGuess; }
  // The length of sequence 0 without the guess at its end.
  size_t decided() const { return std::min(guess_from_, history_.size()); }
  int guessed() const { return int(history_.size() - decided()); }
  // Removes the tokens of sequence 0 from position `length` on and makes `logits`, a copy the
  // caller kept of the logits after token `length - 1`, the last logits again: generation goes
  // on from there without a pass (a beginning of the answer that was thrown away).
  void rewind(size_t length, std::vector<float> logits);

  // One llama_decode of tokens of any sequences (at most n_batch). Tokens of sequence 0 must
  // continue it in order. Logits of the i-th token (if kept) are then logits_at(i).
  void decode(const std::vector<BatchToken>& tokens, PassCounter& counter);
  const float* logits_at(int index) const;
  // Lets `sequence` see all cells of sequence 0 (tags them; nothing is copied).
  void share_main(llama_seq_id sequence);
  // Makes the cells of `sequence` that follow sequence 0's end part of sequence 0: they hold
  // `tokens`, computed over the same prefix. Nothing is computed; the logits of the last of
  // them are not available.
  void adopt(llama_seq_id sequence, const std::vector<llama_token>& tokens);
  // Removes a sequence's cells from positions `from` on (cells shared with others stay).
  void drop(llama_seq_id sequence, llama_pos from = 0);

  // Asked before every pass; when it returns true, the pass throws Cancelled instead.
  void set_interrupt(std::function<bool()> interrupt) { interrupt_ = std::move(interrupt); }
  // Told after every pass the tokens it carried, the rows of logits it kept and its time in ms:
  // what passes cost now.
  using PassObserver = std::function<void(int tokens, int rows, double ms)>;
  void observe_passes(PassObserver observer) { observe_ = std::move(observer); }

  // The first `length` cells of sequence 0 as llama.cpp's sequence state (positions, keys,
  // values); sequence 0 itself is left as it is.
  std::vector<uint8_t> save(size_t length);
  // Replaces everything the context holds with a saved state and its tokens. Returns false,
  // leaving the context empty, if llama.cpp rejects the state (a different layout).
  bool restore(const std::vector<llama_token>& tokens, const std::vector<uint8_t>& state);

  void clear();
  int size() const { return n_ctx_; }
  int batch_limit() const { return n_batch_; }
  int used() const { return int(history_.size()); }
  // Tokens of sequence 0, in position order.
  const std::vector<llama_token>& history() const { return history_; }

 private:
  void check_room(size_t extra) const;
  // Forgets the prompt's kept logits when sequence 0 is cut to `length` below their position.
  void forget_prompt_logits_beyond(size_t length);

  llama_context* ctx_ = nullptr;
  llama_batch batch_{};
  int n_ctx_ = 0;
  int n_batch_ = 0;
  int sequences_ = kSequences;
  std::vector<llama_token> history_;
  static constexpr size_t kNoGuess = size_t(-1);
  size_t guess_from_ = kNoGuess;  // see mark_guess
  std::function<bool()> interrupt_;
  PassObserver observe_;
  // The last pass's tokens of sequence 0: the position of the first, and per token the batch
  // index of its logits (-1 if not kept). Logits of earlier passes are gone.
  size_t last_pass_start_ = 0;
  std::vector<int> last_pass_logits_;
  std::vector<float> rewound_logits_;  // of the last token, after a rewind (until the next pass)
  // A copy of the logits after the last start_from's prompt, and that prompt's length (0: none).
  std::vector<float> prompt_logits_;
  size_t prompt_logits_after_ = 0;
};

}  // namespace sw
