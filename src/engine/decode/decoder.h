// The one serial decode loop and the strategies that make its modes.
//
// The loop asks the strategy, from the logits of the last pass, which tokens the next pass
// carries; it runs that pass and repeats until the strategy says the call is complete. Modes
// differ only in their strategy: free (argmax), constrained (argmax among tokens the grammar
// accepts), jump-forward (constrained, plus the text the grammar forces in the same pass).
// With a drafter (speculative decoding), a pass also carries a guess of the tokens that
// follow; the strategy's later choices are checked against it and, while they agree, taken
// from the cache without a pass.
#pragma once

#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/constraint/matcher.h"
#include "engine/decode/chooser.h"
#include "engine/decode/drafter.h"
#include "engine/decode/greedy.h"
#include "engine/model/context.h"
#include "schemaweaver/engine.h"

namespace sw {

struct Step {
  std::vector<llama_token> tokens;  // to append in one pass
  int sampled = 0;                  // how many of them the model chose (the rest were forced)
  bool complete = false;            // the call is complete after these tokens: no pass needed
  bool stop = false;                // nothing more to append (end of generation)
  float margin = kNoRival;          // sampled: the chosen token's lead (see Decision)
  // With stop: the answer ended before its last `retracted` tokens (taken already, `retracted_bytes`
  // of text): they leave the text and the cache.
  int retracted = 0;
  size_t retracted_bytes = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Forced tokens to append before the first sample (none by default).
  virtual Step start() { return {}; }
  virtual Step next(const float* logits) = 0;
  // How many leading tokens of `draft` the strategy could choose after its last step (a draft
  // token it could never choose is not worth a place in a pass).
  virtual size_t admissible(const std::vector<llama_token>& draft) const { return draft.size(); }
  virtual double constraint_ms() const { return 0; }
  virtual int constraint_steps() const { return 0; }
};

// Every strategy's choices are the `chooser`'s (greedy, or drawn: CallOptions::sampling).
std::unique_ptr<Strategy> make_strategy(DecodeMode mode, const LoadedModel& model,
                                        std::shared_ptr<const Grammar> grammar, Chooser& chooser = Chooser::greedy());

// Jump-forward decoding that starts where `from` stands: the text it has consumed is in the
// cache already (a call taken over half-way, as SchemaWeaver's verification does).
std::unique_ptr<Strategy> make_jump_forward(const LoadedModel& model, Matcher from, Chooser& chooser = Chooser::greedy());

// Jump-forward's step: the `sampled` token (whose text the matcher has consumed; none at a
// phase's start) and the text the grammar forces next, tokenized together so that the model sees
// its own tokenization - the sampled token may fuse with it. Where the forced text spells an
// atomic token ("<tool_call>"), the model may write it as that token or as plain text, and the
// two lead to different continuations: the jump stops before it so that the model decides, as
// under plain constrained decoding. The last token before the stop is held back too, since the
// model may fuse it with what follows; what is held back stays forced and is decoded normally.
// Advances `matcher` over the forced text it takes; returns the tokens (just the sampled one, or
// none, when nothing is taken).
std::vector<llama_token> jump_forward(const LoadedModel& model, Matcher& matcher, std::optional<llama_token> sampled,
                                      const std::string& sampled_text);

// The model's thinking (CallOptions::thinking_budget), which `model.reasoning` must have: the
// block's opener, free reasoning of at most `budget` tokens to the block's end marker, and the
// block's close as the template writes it; it stops once the close is in the cache.
std::unique_ptr<Strategy> make_thinking(const LoadedModel& model, int budget, Chooser& chooser = Chooser::greedy());
// What is left to write of `block`'s close after `reasoning` (the text since the opener): the
// close after the end marker where the reasoning holds it; else all of the close that the
// reasoning does not already end with (reasoning that ends in a newline keeps its newline once).
std::string unwritten_close(const llama_chat::ReasoningBlock& block, const std::string& reasoning);

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to);

// Watches the text of an answer as it is decided and notes when each call's JSON object
// closes - or, for a format whose calls are not JSON objects, when its `close_marker` appears
// (CallFormat::call_close_marker; outside JSON strings where `marker_outside_strings`, as for
// python-like calls, whose values are JSON): from then on that call can be executed. `on_close`,
// if set, gets each closed object's text and the time; `on_text` every byte of the answer's
// decided text once, in order, before the closes it holds.
class CallTracker {
 public:
  using OnClose = std::function<void(const std::string& object, double at_ms)>;
  explicit CallTracker(Clock::time_point origin, std::string close_marker = "", bool marker_outside_strings = false)
      : origin_(origin), close_marker_(std::move(close_marker)), marker_outside_strings_(marker_outside_strings) {}
  void feed(const std::string& text);
  void skip(size_t bytes) { skip_ += bytes; }  // the next bytes fed were seen already
  void on_close(OnClose callback) { on_close_ = std::move(callback); }
  void on_text(std::function<void(const std::string&)> callback) { on_text_ = std::move(callback); }
  const std::vector<double>& closed_ms() const { return closed_ms_; }
  Clock::time_point origin() const { return origin_; }

 private:
  // Whether `c` is part of a JSON string (its quotes included), following the string's escapes.
  bool within_string(char c);

  Clock::time_point origin_;
  const std::string close_marker_;
  const bool marker_outside_strings_;
  std::string recent_;  // the last bytes fed, as many as the close marker has
  size_t skip_ = 0;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
  std::string object_;  // the text of the object open now
  OnClose on_close_;
  std::function<void(const std::string&)> on_text_;
  std::vector<double> closed_ms_;
};

struct GenerationResult {
  std::string text;
  PassCounter passes;
  int forced_passes = 0;
  int sampled_tokens = 0;
  bool hit_token_limit = false;
  bool complete = false;  // the strategy completed its grammar (not stopped or cut off)
  int draft_tokens = 0;           // draft tokens checked against the strategy's choices
  int accepted_draft_tokens = 0;  // of which the strategy chose
  std::vector<Decision> decisions;  // of the sampled tokens, offsets into `text`
};

// Runs the strategy until it completes or stops, or `max_tokens` tokens were sampled. With a
// drafter, passes also carry drafts (the output is the same). The cache then holds exactly the
// generated text, except for a guess the context holds at its end (Context::mark_guess), which
// is checked as a drafter's draft is: when the strategy completes before it has checked all of
// that guess, the rest stays in the cache, still a guess, for the phase that goes on from there.
GenerationResult generate(Context& context, const LoadedModel& model, Strategy& strategy,
                          int max_tokens, CallTracker* tracker = nullptr, Drafter* drafter = nullptr);

// What a strategy writes if the model's choices spell `text`.
struct Spelled {
  std::vector<llama_token> tokens;  // the tokens its steps append, in order
  bool complete = false;            // it completed within the text
  std::string unwritten;            // complete: the text of its last step (left to what follows)
};

// Runs `strategy` without a model: each choice is the longest token it allows that continues
// `text` (models mostly write text as its longest tokens). Stops where the strategy completes,
// or where its steps leave the text (nothing then continues it).
Spelled spell(Strategy& strategy, const LoadedModel& model, const std::string& text);

// The constrained decoders' choice among the tokens whose text `matcher` accepts, and end of
// generation where it can end: the best by logit, or the `chooser`'s draw; -1 if none. `margin`
// as for pick_greedy.
llama_token pick_constrained(const LoadedModel& model, const Matcher& matcher, const float* logits,
                             float* margin = nullptr, Chooser& chooser = Chooser::greedy());

}  // namespace sw
