// Drafts for speculative decoding: guesses of the tokens that follow, checked by the model in
// the pass that carries its next token (the longest agreeing prefix is taken, greedy, so the
// output is the same as without drafts).
//
// - PromptLookup: a tool call mostly repeats text the model has already seen (a city or a name
//   from the user's message, an enum member or a key from the tool definitions), so the tokens
//   that followed the latest earlier occurrence of the answer's last few tokens are a guess.
// - ModelDraft: a smaller model with the same vocabulary decodes the guess greedily.
//
// Both size the draft by cost: the measured cost curve prices a pass carrying n tokens, the
// acceptance seen so far prices the draft, and a draft model's own passes count against it.
#pragma once

#include <memory>
#include <vector>

#include <llama.h>

#include "engine/measure/cost_curve.h"
#include "engine/model/context.h"

namespace sw {

class Drafter {
 public:
  static constexpr int kMaxDraft = 8;

  // Without a curve every pass is taken to cost the same (the memory-bound ideal).
  explicit Drafter(const CostCurve* curve) : curve_(curve) {}
  virtual ~Drafter() = default;

  // A draft to follow `history` (the conversation so far, ending with the `carried` tokens the
  // next pass carries anyway), at most `limit` tokens long, possibly empty.
  virtual std::vector<llama_token> propose(const std::vector<llama_token>& history, int carried, int limit) = 0;

  // The outcome of checking draft tokens: `checked` compared, `accepted` of them taken.
  void record(int checked, int accepted);
  int checked() const { return checked_; }
  int accepted() const { return accepted_; }

  // The draft length with the most tokens decided per millisecond, for a pass that carries
  // `carried` tokens anyway, when each draft token is taken with probability `p` once the
  // ones before it were and making a draft costs `ms_per_draft_token` (in the curve's unit).
  // 0 when drafting does not pay.
  int best_length(int carried, int available, double p, double ms_per_draft_token = 0) const;

 protected:
  // Acceptance so far, from a prior of 3 in 4 (prompt-lookup drafts of tool calls are taken
  // about that often), so that drafts are tried before there is evidence.
  double acceptance() const { return (accepted_ + 3.0) / (checked_ + 4.0); }
  double pass_cost(int tokens, int rows = 1) const;

 private:
  const CostCurve* curve_;
  int checked_ = 0;
  int accepted_ = 0;
};

class PromptLookup : public Drafter {
 public:
  static constexpr int kMaxNgram = 3;
  using Drafter::Drafter;
  std::vector<llama_token> propose(const std::vector<llama_token>& history, int carried, int limit) override;
};

// Drafts from a text the answer is expected to follow (SchemaWeaver's parallel values, once
// verification has taken a call over serially): the tokens after the first place, from where
// the last draft came from on, where the reference holds the answer's last tokens; prompt
// lookup where the answer has left it.
class ReferenceLookup : public PromptLookup {
 public:
  ReferenceLookup(const CostCurve* curve, std::vector<llama_token> reference)
      : PromptLookup(curve), reference_(std::move(reference)) {}
  std::vector<llama_token> propose(const std::vector<llama_token>& history, int carried, int limit) override;

 private:
  std::vector<llama_token> reference_;
  size_t cursor_ = 0;  // where the last draft was found
};

// The tokens that followed the latest earlier occurrence of the longest suffix of `history`
// (PromptLookup::kMaxNgram tokens down to 1) that occurred before, at most `limit` of them.
std::vector<llama_token> lookup_continuation(const std::vector<llama_token>& history, int limit);

class ModelDraft : public Drafter {
 public:
  // `context` belongs to the draft model and is kept in step with the conversation (its cache
  // is reused from one draft to the next); `draft_pass_ms` is the draft model's pass cost.
  ModelDraft(const CostCurve* curve, const LoadedModel& draft_model, Context& context, double draft_pass_ms)
      : Drafter(curve), model_(draft_model), context_(context), draft_pass_ms_(draft_pass_ms) {}
  std::vector<llama_token> propose(const std::vector<llama_token>& history, int carried, int limit) override;

 private:
  const LoadedModel& model_;
  Context& context_;
  double draft_pass_ms_;
};

// Throws Error unless the two models spell every token the same (a draft must be readable by
// the model that checks it).
void require_same_vocabulary(const LoadedModel& model, const LoadedModel& draft_model);

}  // namespace sw
