#include "engine/decode/decoder.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>

namespace sw {
namespace {

double ms_since(Clock::time_point start) { return ms_between(start, Clock::now()); }

// Free decoding: the argmax token, until end of generation or the text comes to hold `closer`
// (the format's closer of a call; none if empty).
class FreeStrategy : public Strategy {
 public:
  FreeStrategy(const LoadedModel& model, std::string closer, Chooser& chooser)
      : model_(model), closer_(std::move(closer)), chooser_(chooser) {}

  Step next(const float* logits) override {
    float margin = kNoRival;
    llama_token token =
        chooser_.choose(logits, model_.vocab_size(), [](llama_token) { return true; }, nullptr, &margin);
    if (model_.is_end_of_generation(token)) return {{}, 0, false, true, margin};
    const std::string& piece = model_.pieces[size_t(token)];
    text_ += piece;
    // Only the end of the text can hold a closer that this token completed.
    size_t from = text_.size() - std::min(text_.size(), piece.size() + closer_.size());
    bool closed = !closer_.empty() && text_.find(closer_, from) != std::string::npos;
    return {{token}, 1, closed, false, margin};
  }

 private:
  const LoadedModel& model_;
  const std::string closer_;  // text that ends a call in free output
  Chooser& chooser_;
  std::string text_;
};

// The thinking block: its opener forced, free reasoning until the model writes the block's end
// marker, ends its answer or has reasoned `budget` tokens, then what is left of the block's
// close forced as the template writes it (so a later turn's prompt holds the same text).
class ThinkingStrategy : public Strategy {
 public:
  ThinkingStrategy(const LoadedModel& model, int budget, Chooser& chooser)
      : model_(model), block_(model.reasoning), free_(model, block_.end, chooser), budget_(budget) {}

  Step start() override { return {model_.tokenize(block_.opener, false), 0}; }

  Step next(const float* logits) override {
    if (closed_) return {{}, 0, false, true};
    if (reasoned_ == budget_) return close({});
    Step step = free_.next(logits);
    if (step.stop) return close({});  // the model ended its answer within the block
    reasoned_ += 1;
    text_ += model_.pieces[size_t(step.tokens.front())];
    return step.complete ? close(std::move(step)) : step;
  }

 private:
  // `last` (the model's last token, if any) with the rest of the block's close after it.
  Step close(Step last) {
    closed_ = true;
    std::vector<llama_token> rest = model_.tokenize(unwritten_close(block_, text_), false);
    last.tokens.insert(last.tokens.end(), rest.begin(), rest.end());
    last.complete = false;  // the close's last tokens need their pass: the answer follows them
    return last;
  }

  const LoadedModel& model_;
  const llama_chat::ReasoningBlock& block_;
  FreeStrategy free_;
  const int budget_;
  int reasoned_ = 0;
  bool closed_ = false;
  std::string text_;
};

// Constrained decoding over the call grammar; with `jump` set, also jump-forward decoding.
class GrammarStrategy : public Strategy {
 public:
  GrammarStrategy(const LoadedModel& model, Matcher from, bool jump, Chooser& chooser)
      : model_(model), matcher_(std::move(from)), jump_(jump), chooser_(chooser) {}

  Step start() override {
    if (!jump_) return {};
    if (Step done = finished_step(); done.complete) return done;
    return forced_step({}, "");
  }

  Step next(const float* logits) override {
    auto started = Clock::now();
    if (!deciding_ && matcher_.can_end() && matcher_.can_continue() &&
        !matcher_.grammar().next_call_opening.empty()) {
      deciding_ = true;
      since_end_ = {};
    }
    if (deciding_) {
      Step step = model_choice(logits);
      constraint_ms_ += ms_since(started);
      constraint_steps_ += 1;
      return step;
    }
    float margin = kNoRival;
    llama_token token = pick_constrained(model_, matcher_, logits, &margin, chooser_);
    Step step;
    if (token < 0 || model_.is_end_of_generation(token)) {
      step.stop = true;
      step.complete = token >= 0;  // end of generation is allowed only where the grammar can end
      step.margin = margin;
    } else {
      const std::string& piece = model_.pieces[size_t(token)];
      matcher_.advance(piece);
      step = jump_ ? jump_step(token, piece) : Step{{token}, 1, false, false};
      if (!step.complete) step.complete = !matcher_.can_continue();
      step.margin = margin;
    }
    constraint_ms_ += ms_since(started);
    constraint_steps_ += 1;
    return step;
  }

  double constraint_ms() const override { return constraint_ms_; }
  int constraint_steps() const override { return constraint_steps_; }

  size_t admissible(const std::vector<llama_token>& draft) const override {
    Matcher m = matcher_;
    size_t n = 0;
    for (; n < draft.size(); ++n) {
      const std::string& piece = model_.pieces[size_t(draft[n])];
      if (model_.is_end_of_generation(draft[n]) || piece.empty() || !m.advance(piece)) break;
    }
    return n;
  }

 private:
  // Where the turn may end or go on into another call, the model's own choice, as free decoding
  // makes it: its tokens are taken while the grammar accepts them, until the next call opens. If
  // it ends first, or writes what the grammar rejects (Qwen2.5-Coder goes on from its call with a
  // <tool_response> of its own making), the turn ends where it could: the tokens since are
  // retracted. Constrained, it would be made to write another call.
  Step model_choice(const float* logits) {
    float margin = kNoRival;
    const llama_token token = chooser_.choose(
        logits, model_.vocab_size(), [](llama_token) { return true; }, nullptr, &margin);
    const std::string* piece = token < 0 ? nullptr : &model_.pieces[size_t(token)];
    if (!piece || model_.is_end_of_generation(token) || piece->empty() || !matcher_.accepts(*piece)) {
      Step end{{}, 0, true, true, margin};
      end.retracted = since_end_.tokens;
      end.retracted_bytes = since_end_.text.size();
      deciding_ = false;
      return end;
    }
    matcher_.advance(*piece);
    since_end_.text += *piece;
    since_end_.tokens += 1;
    deciding_ = since_end_.text.find(matcher_.grammar().next_call_opening) == std::string::npos;
    return {{token}, 1, !matcher_.can_continue(), false, margin};
  }

  // After a sampled token: if the grammar forces everything that is left, the answer is
  // complete now (no pass decodes text that nothing can change); otherwise the forced step.
  Step jump_step(llama_token sampled, const std::string& sampled_text) {
    Step step = finished_step(sampled, sampled_text);
    if (!step.complete) return forced_step(sampled, sampled_text);
    step.tokens.insert(step.tokens.begin(), sampled);
    step.sampled = 1;
    return step;
  }

  // If the grammar forces all the text that is left, that text as a complete step. Not where
  // the text, read together with the `sampled` token before it, spells an atomic token other
  // than that one: the model decides how it writes that (see forced_step), and what comes
  // after (the next phase, another call) goes on from its choice.
  Step finished_step(std::optional<llama_token> sampled = std::nullopt, const std::string& sampled_text = "") {
    std::string rest = matcher_.forced_text();
    Matcher end = matcher_;
    if (rest.empty() || !end.advance(rest) || end.can_continue()) return {};
    std::vector<llama_token> joint = model_.tokenize(sampled_text + rest, false);
    auto from = joint.begin() + (sampled && !joint.empty() && joint.front() == *sampled ? 1 : 0);
    if (std::any_of(from, joint.end(), [&](llama_token t) { return model_.is_atomic(t); })) return {};
    matcher_ = std::move(end);
    // Without a sampled token the joint reading is the rest's own.
    return {sampled ? model_.tokenize(rest, false) : std::move(joint), 0, true, false};
  }

  // The sampled token (or none) and the text the grammar forces after it (jump_forward).
  Step forced_step(std::optional<llama_token> sampled, const std::string& sampled_text) {
    Step step;
    if (sampled) step = {{*sampled}, 1, false, false};
    std::vector<llama_token> tokens = jump_forward(model_, matcher_, sampled, sampled_text);
    if (!tokens.empty()) step.tokens = std::move(tokens);
    return step;
  }

  const LoadedModel& model_;
  Matcher matcher_;
  bool jump_;
  Chooser& chooser_;
  bool deciding_ = false;  // between a point where the turn may end and the next call's opening
  struct {
    std::string text;
    int tokens = 0;
  } since_end_;  // what the model wrote since that point
  double constraint_ms_ = 0;
  int constraint_steps_ = 0;
};

}  // namespace

std::vector<llama_token> jump_forward(const LoadedModel& model, Matcher& matcher, std::optional<llama_token> sampled,
                                      const std::string& sampled_text) {
  const std::vector<llama_token> alone = sampled ? std::vector<llama_token>{*sampled} : std::vector<llama_token>{};
  std::string forced = matcher.forced_text();
  if (forced.empty()) return alone;
  std::vector<llama_token> tokens = model.tokenize(sampled_text + forced, false);
  // The sampled token itself may be atomic; it is the model's choice already.
  auto from = tokens.begin() + (sampled && !tokens.empty() && tokens.front() == *sampled ? 1 : 0);
  auto atomic = std::find_if(from, tokens.end(), [&](llama_token t) { return model.is_atomic(t); });
  tokens.erase(atomic, tokens.end());
  if (tokens.empty()) return alone;
  tokens.pop_back();
  std::string committed = model.detokenize(tokens);
  if (committed.size() <= sampled_text.size() || committed.compare(0, sampled_text.size(), sampled_text) != 0)
    return alone;
  matcher.advance(committed.substr(sampled_text.size()));
  return tokens;
}

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

bool CallTracker::within_string(char c) {
  if (in_string_) {
    if (escaped_) escaped_ = false;
    else if (c == '\\') escaped_ = true;
    else if (c == '"') in_string_ = false;
    return true;
  }
  return in_string_ = c == '"';
}

void CallTracker::feed(const std::string& text) {
  size_t skipped = std::min(skip_, text.size());
  skip_ -= skipped;
  if (on_text_ && skipped < text.size()) on_text_(text.substr(skipped));
  for (char c : text.substr(skipped)) {
    if (!close_marker_.empty()) {
      if (marker_outside_strings_ && within_string(c)) {
        recent_.clear();
        continue;
      }
      recent_ += c;
      if (recent_.size() > close_marker_.size()) recent_.erase(0, 1);
      if (recent_ == close_marker_) closed_ms_.push_back(ms_since(origin_));
      continue;
    }
    if (depth_ > 0 || c == '{') object_ += c;
    if (depth_ > 0 && within_string(c)) continue;
    if (c == '{') {
      ++depth_;
    } else if (c == '}' && depth_ > 0 && --depth_ == 0) {
      closed_ms_.push_back(ms_since(origin_));
      if (on_close_) on_close_(object_, closed_ms_.back());
      object_.clear();
    }
  }
}

llama_token pick_constrained(const LoadedModel& model, const Matcher& matcher, const float* logits,
                             float* margin, Chooser& chooser) {
  std::optional<ByteSet> first_bytes;  // computed only if the top candidates are all rejected
  return chooser.choose(
      logits, model.vocab_size(),
      [&](llama_token t) {
        if (model.is_end_of_generation(t)) return matcher.can_end();
        const std::string& piece = model.pieces[size_t(t)];
        return !piece.empty() && matcher.accepts(piece);
      },
      [&](llama_token t) {
        if (!first_bytes) first_bytes = matcher.next_bytes();
        const std::string& piece = model.pieces[size_t(t)];
        return model.is_end_of_generation(t) || (!piece.empty() && first_bytes->test((unsigned char)piece[0]));
      },
      margin);
}

Spelled spell(Strategy& strategy, const LoadedModel& model, const std::string& text) {
  Spelled spelled;
  std::string written;
  std::vector<float> logits(size_t(model.vocab_size()));
  for (Step step = strategy.start();;) {
    std::string piece = model.detokenize(step.tokens);
    if (text.compare(written.size(), piece.size(), piece) != 0) break;
    if (step.complete) {
      spelled.complete = true;
      spelled.unwritten = piece;
      break;
    }
    written += piece;
    spelled.tokens.insert(spelled.tokens.end(), step.tokens.begin(), step.tokens.end());
    if (step.stop || written.size() == text.size()) break;
    for (size_t t = 0; t < logits.size(); ++t) {
      const std::string& p = model.pieces[t];
      bool continues = !p.empty() && text.compare(written.size(), p.size(), p) == 0;
      logits[t] = continues ? float(p.size()) : -1.0f;
    }
    step = strategy.next(logits.data());
  }
  return spelled;
}

std::unique_ptr<Strategy> make_strategy(DecodeMode mode, const LoadedModel& model,
                                        std::shared_ptr<const Grammar> grammar, Chooser& chooser) {
  switch (mode) {
    case DecodeMode::Free: return std::make_unique<FreeStrategy>(model, model.format.free_stop(), chooser);
    case DecodeMode::Constrained:
    case DecodeMode::Speculative: return std::make_unique<GrammarStrategy>(model, Matcher(grammar), false, chooser);
    case DecodeMode::JumpForward: return make_jump_forward(model, Matcher(grammar), chooser);
    case DecodeMode::SchemaWeaver: break;  // not one strategy: see weaver.h
  }
  throw Error("unknown decode mode");
}

std::string unwritten_close(const llama_chat::ReasoningBlock& block, const std::string& reasoning) {
  const size_t end = reasoning.find(block.end);
  if (end != std::string::npos) return block.close.substr(block.close.find(block.end) + block.end.size());
  size_t written = std::min(block.close.size(), reasoning.size());
  while (written > 0 && reasoning.compare(reasoning.size() - written, written, block.close, 0, written) != 0) --written;
  return block.close.substr(written);
}

std::unique_ptr<Strategy> make_thinking(const LoadedModel& model, int budget, Chooser& chooser) {
  return std::make_unique<ThinkingStrategy>(model, budget, chooser);
}

std::unique_ptr<Strategy> make_jump_forward(const LoadedModel& model, Matcher from, Chooser& chooser) {
  return std::make_unique<GrammarStrategy>(model, std::move(from), true, chooser);
}

namespace {

// Puts a step's tokens after the `decided` tokens of the conversation. The cache may hold
// draft tokens after them: as many of those as the step chose are taken without a pass; the
// rest of the draft is removed and the step's other tokens go through a pass, with a new draft
// behind them. Returns the number of decided tokens after the step.
size_t extend(Context& context, size_t decided, const Step& step, Strategy& strategy, Drafter* drafter,
              int draft_limit, GenerationResult& result) {
  const std::vector<llama_token>& cached = context.history();
  size_t drafted = cached.size() - decided;
  size_t same = 0;
  while (same < step.tokens.size() && same < drafted && cached[decided + same] == step.tokens[same]) ++same;
  if (drafted > 0) {
    int checked = int(std::min(drafted, same + 1));
    result.draft_tokens += checked;
    result.accepted_draft_tokens += int(same);
    if (drafter) drafter->record(checked, int(same));
  }
  if (same == step.tokens.size()) return decided + same;
  context.truncate(decided + same);
  std::vector<llama_token> tokens(step.tokens.begin() + long(same), step.tokens.end());
  size_t carried = tokens.size();
  if (drafter) {
    std::vector<llama_token> history(cached.begin(), cached.end());
    history.insert(history.end(), tokens.begin(), tokens.end());
    int room = context.size() - int(history.size());
    std::vector<llama_token> draft = drafter->propose(history, int(carried), std::min(draft_limit, room));
    draft.resize(strategy.admissible(draft));
    tokens.insert(tokens.end(), draft.begin(), draft.end());
  }
  if (step.sampled < int(step.tokens.size())) result.forced_passes += 1;
  context.append(tokens, result.passes, tokens.size() - carried + 1);
  return decided + step.tokens.size();
}

}  // namespace

GenerationResult generate(Context& context, const LoadedModel& model, Strategy& strategy,
                          int max_tokens, CallTracker* tracker, Drafter* drafter) {
  GenerationResult result;
  const bool guessed = context.guessed() > 0;
  size_t decided = context.decided();  // tokens of the answer so far; a draft may follow
  Step step = strategy.start();
  while (true) {
    // The model chose a token, or to end here.
    if (step.sampled > 0 || (step.stop && step.margin < kNoRival))
      result.decisions.push_back({result.text.size(), step.margin});
    if (!step.tokens.empty()) {
      std::string text = model.detokenize(step.tokens);
      if (tracker) tracker->feed(text);
      result.text += text;
      result.sampled_tokens += step.sampled;
      if (step.complete) {  // the call is known; its last tokens need no pass yet
        result.complete = true;
        break;
      }
      decided = extend(context, decided, step, strategy, drafter, max_tokens - result.sampled_tokens, result);
    }
    if (step.stop) {
      result.complete = step.complete;
      if (step.retracted > 0) {
        result.text.resize(result.text.size() - step.retracted_bytes);
        while (!result.decisions.empty() && result.decisions.back().offset >= result.text.size())
          result.decisions.pop_back();
        if (step.margin < kNoRival) result.decisions.push_back({result.text.size(), step.margin});
        decided -= size_t(step.retracted);
        context.truncate(decided);
      }
      break;
    }
    if (result.sampled_tokens >= max_tokens) {
      result.hit_token_limit = true;
      break;
    }
    step = strategy.next(context.logits_after(decided));
  }
  if (!result.complete || !guessed) context.truncate(decided);  // a draft the answer did not take
  context.mark_guess(decided);  // the rest of a guess it did not reach stays one
  return result;
}

}  // namespace sw
