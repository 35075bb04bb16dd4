#include "engine/decode/drafter.h"

#include <algorithm>

#include "engine/decode/greedy.h"

namespace sw {

void Drafter::record(int checked, int accepted) {
  checked_ += checked;
  accepted_ += accepted;
}

double Drafter::pass_cost(int tokens, int rows) const {
  if (!curve_ || curve_->max_tokens() == 0) return 1.0;
  return curve_->pass_ms(tokens, rows);
}

int Drafter::best_length(int carried, int available, double p, double ms_per_draft_token) const {
  int best = 0;
  double best_rate = 1.0 / pass_cost(carried);
  double expected = 1.0;  // tokens the pass decides: the successor of the carried tokens, then drafts
  double taken = 1.0;
  for (int k = 1; k <= std::min(available, kMaxDraft); ++k) {
    taken *= p;
    expected += taken;
    // The pass keeps the logits of each draft token and of the token before them.
    double rate = expected / (pass_cost(carried + k, k + 1) + ms_per_draft_token * k);
    if (rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  return best;
}

std::vector<llama_token> lookup_continuation(const std::vector<llama_token>& history, int limit) {
  const size_t size = history.size();
  for (size_t n = std::min<size_t>(PromptLookup::kMaxNgram, size > 0 ? size - 1 : 0); n >= 1; --n) {
    auto suffix = history.end() - long(n);
    // Latest occurrence first: what the answer itself wrote is the likeliest to repeat.
    for (size_t start = size - n; start-- > 0;) {
      if (!std::equal(suffix, history.end(), history.begin() + long(start))) continue;
      size_t from = start + n;
      size_t count = std::min(size - from, size_t(std::max(limit, 0)));
      return {history.begin() + long(from), history.begin() + long(from + count)};
    }
  }
  return {};
}

std::vector<llama_token> PromptLookup::propose(const std::vector<llama_token>& history, int carried, int limit) {
  std::vector<llama_token> draft = lookup_continuation(history, std::min(limit, kMaxDraft));
  draft.resize(size_t(best_length(std::max(carried, 1), int(draft.size()), acceptance())));
  return draft;
}

std::vector<llama_token> ReferenceLookup::propose(const std::vector<llama_token>& history, int carried, int limit) {
  const size_t size = history.size();
  for (size_t n = std::min<size_t>(kMaxNgram, size); n >= 1; --n) {
    auto suffix = history.end() - long(n);
    for (size_t start = cursor_; start + n < reference_.size(); ++start) {
      if (!std::equal(suffix, history.end(), reference_.begin() + long(start))) continue;
      cursor_ = start + n;
      size_t count = std::min(reference_.size() - cursor_, size_t(std::max(std::min(limit, kMaxDraft), 0)));
      std::vector<llama_token> draft(reference_.begin() + long(cursor_), reference_.begin() + long(cursor_ + count));
      draft.resize(size_t(best_length(std::max(carried, 1), int(draft.size()), acceptance())));
      return draft;
    }
  }
  return PromptLookup::propose(history, carried, limit);
}

std::vector<llama_token> ModelDraft::propose(const std::vector<llama_token>& history, int carried, int limit) {
  int length = best_length(std::max(carried, 1), std::min(limit, kMaxDraft), acceptance(), draft_pass_ms_);
  if (length == 0) return {};
  // Bring the draft model's cache to the conversation (its cached prefix is kept).
  PassCounter passes;
  context_.start_from(history, passes);
  std::vector<llama_token> draft;
  while (true) {
    llama_token token = pick_greedy(context_.last_logits(), model_.vocab_size(), [](llama_token) { return true; });
    if (model_.is_end_of_generation(token)) break;
    draft.push_back(token);
    if (int(draft.size()) == length || context_.used() + 1 >= context_.size()) break;
    context_.append({token}, passes);
  }
  return draft;
}

void require_same_vocabulary(const LoadedModel& model, const LoadedModel& draft_model) {
  if (model.pieces != draft_model.pieces)
    throw Error("the draft model's vocabulary differs from the model's (" + std::to_string(draft_model.vocab_size()) +
                " vs " + std::to_string(model.vocab_size()) + " tokens, or tokens spelled differently)");
}

}  // namespace sw
