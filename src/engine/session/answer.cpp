#include "engine/session/answer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/decode/opening.h"
#include "engine/weave/weaver.h"
#include "util/utf8.h"

namespace sw {
namespace {

void count_passes(CallStats& stats, const PassCounter& passes) {
  stats.call_passes += passes.passes;
  stats.call_tokens += passes.tokens;
}


// Tells `on_text` what `text` holds up to `end` beyond the first `told` bytes: its whole UTF-8
// characters, or all of it where `last` (a text cut off may end inside a character). Returns the
// bytes told so far.
size_t tell_whole_characters(const std::string& text, size_t told, size_t end, bool last,
                             const std::function<void(const std::string&)>& on_text) {
  if (end <= told) return told;
  const size_t whole = last ? end : told + whole_utf8_prefix(text.substr(told, end - told));
  if (whole > told) on_text(text.substr(told, whole - told));
  return std::max(told, whole);
}

// The model's log probability of `token` after `logits` (a softmax over every token), with the
// `top` most likely tokens there.
TokenLogprob weigh(const LoadedModel& model, const float* logits, llama_token token, int top) {
  const int n = model.vocab_size();
  const float best = *std::max_element(logits, logits + n);
  double total = 0;
  for (int t = 0; t < n; ++t) total += std::exp(double(logits[t] - best));
  const float log_total = float(std::log(total)) + best;
  TokenLogprob weighed{model.pieces[size_t(token)], logits[token] - log_total, {}};
  if (top <= 0) return weighed;
  std::vector<llama_token> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  const auto likelier = [logits](llama_token a, llama_token b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(ids.begin(), ids.begin() + std::min(top, n), ids.end(), likelier);
  for (int i = 0; i < std::min(top, n); ++i) weighed.top.emplace_back(model.pieces[size_t(ids[size_t(i)])], logits[ids[size_t(i)]] - log_total);
  return weighed;
}

// A reply in text as it is decided by `inner` (the free strategy, or the opening probe): it ends
// before the first stop string it writes (CallOptions::stop), and its text is told to
// CallOptions::on_text in whole UTF-8 characters - all but the bytes that may still begin a stop
// string. Both only once `is_text` says the answer is a reply in text: never inside a call. Each
// token the model chooses is weighed where CallOptions::logprobs asks.
class ReplyText : public Strategy {
 public:
  ReplyText(Strategy& inner, const LoadedModel& model, const CallOptions& options, std::function<bool()> is_text)
      : inner_(inner), model_(model), options_(options), is_text_(std::move(is_text)) {
    for (const std::string& s : options.stop) held_ = std::max(held_, s.size() - 1);
  }
  Step start() override { return follow(inner_.start()); }
  Step next(const float* logits) override {
    Step step = inner_.next(logits);
    // Each token the model chose, weighed where it begins in the text.
    if (options_.logprobs >= 0 && step.sampled == 1 && !step.tokens.empty())
      logprobs_.push_back({text_.size(), weigh(model_, logits, step.tokens.front(), options_.logprobs)});
    return follow(std::move(step));
  }
  size_t admissible(const std::vector<llama_token>& draft) const override { return inner_.admissible(draft); }
  double constraint_ms() const override { return inner_.constraint_ms(); }
  int constraint_steps() const override { return inner_.constraint_steps(); }

  // Where a stop string cut the reply's text (npos: nowhere).
  size_t stopped_at() const { return stopped_at_; }
  // The chosen tokens' log probabilities (CallOptions::logprobs), those of the text kept.
  std::vector<TokenLogprob> logprobs() const {
    std::vector<TokenLogprob> kept;
    for (const auto& [at, weighed] : logprobs_) {
      if (at < end_of_text()) kept.push_back(weighed);
    }
    return kept;
  }
  // Tells the rest, once the answer ended.
  void finish() { tell(end_of_text(), true); }

 private:
  Step follow(Step step) {
    text_ += model_.detokenize(step.tokens);
    if (stopped_at_ == std::string::npos && is_text_()) {
      for (const std::string& s : options_.stop) {
        const size_t at = text_.find(s, checked_ > s.size() - 1 ? checked_ - (s.size() - 1) : 0);
        stopped_at_ = std::min(stopped_at_, at);
      }
      checked_ = text_.size();
      // The tokens that wrote the stop string need no pass: the reply ends with them.
      if (stopped_at_ != std::string::npos && !step.tokens.empty()) step.complete = true;
    }
    tell(stopped_at_ != std::string::npos ? stopped_at_ : text_.size() - std::min(text_.size(), held_), false);
    return step;
  }

  size_t end_of_text() const { return std::min(stopped_at_, text_.size()); }

  // Tells the text up to `end` if the answer is a reply: its whole characters, or all of it at
  // the `last` (a reply cut by max_tokens may end inside a character).
  void tell(size_t end, bool last) {
    if (options_.on_text && is_text_()) told_ = tell_whole_characters(text_, told_, end, last, options_.on_text);
  }

  Strategy& inner_;
  const LoadedModel& model_;
  const CallOptions& options_;
  std::function<bool()> is_text_;
  size_t held_ = 0;     // bytes kept back while they may begin a stop string
  std::string text_;
  size_t checked_ = 0;  // of text_, searched for stop strings
  size_t stopped_at_ = std::string::npos;
  size_t told_ = 0;
  std::vector<std::pair<size_t, TokenLogprob>> logprobs_;  // where each token begins in text_
};

}  // namespace

void count_generation(CallStats& stats, const GenerationResult& generated) {
  count_passes(stats, generated.passes);
  stats.call_prefill_passes += generated.forced_passes;
  stats.sampled_tokens += generated.sampled_tokens;
  stats.draft_tokens += generated.draft_tokens;
  stats.accepted_draft_tokens += generated.accepted_draft_tokens;
}

Answer::Answer(Context& context, const LoadedModel& model, const CompiledToolSet& tools, const CallOptions& options,
               Planning planning, Drafter* drafter, Chooser& chooser, Clock::time_point prefilled, CallResult& result)
    : context_(context), model_(model), tools_(&tools), options_(options), planning_(planning), drafter_(drafter),
      chooser_(chooser), prefilled_(prefilled), result_(result), stats_(result.stats),
      tracker_(prefilled, tools.format().call_close_marker(),
               tools.format().arguments.keywords && tools.format().arguments.notation.json()),
      serial_events_(options, result.stats.events) {
  tell_decided_text();
}

void Answer::tell_decided_text() {
  const CallFormat& format = tools_->format();
  if (options_.mode == DecodeMode::Free) return;  // its calls stand only once the answer parsed
  if (!format.named && options_.on_text) {
    tracker_.on_text([this](const std::string& more) {
      decided_ += more;
      told_ = tell_whole_characters(decided_, told_, decided_.size(), false, options_.on_text);
    });
  } else if (options_.on_call_delta && CallDeltas::streams(format)) {
    deltas_.emplace(format, options_.on_call_delta);
    tracker_.on_text([this](const std::string& more) { deltas_->feed(more); });
  }
}

void Answer::decode() {
  std::optional<Decision> opening;
  result_.text_reply = tools_->tools().empty() || options_.tool_choice == ToolChoice::None;
  if (result_.text_reply) {
    std::unique_ptr<Strategy> strategy = reply_opens_no_call_
                                             ? std::make_unique<TextOpening>(model_, tools_->tools(), chooser_)
                                             : make_strategy(DecodeMode::Free, model_, nullptr, chooser_);
    generated_ = reply(*strategy, [] { return true; });
  } else if (options_.tool_choice == ToolChoice::Auto) {
    opening = open();
    declined_ = result_.text_reply && options_.answer_schema;
  }
  if (declined_) {
    stats_.decisions.push_back(*opening);
    return;
  }
  if (result_.text_reply) {
    stats_.phases.push_back({"reply", generated_.passes.passes, generated_.passes.tokens, since_prefill()});
  } else if (options_.mode == DecodeMode::SchemaWeaver &&
             !(serial_plans_ = serial_plans(model_, *tools_, options_, planning_))) {
    WeaveResult woven = weave(context_, model_, *tools_, options_, planning_, tracker_, drafter_, chooser_, stats_);
    generated_ = std::move(woven.generation);
    woven_calls_ = std::move(woven.calls);
    failure_ = std::move(woven.failure);
    cut_in_branches_ = woven.cut_in_branches;
  } else {
    decode_serially();
  }
  count_generation(stats_, generated_);
  if (opening) stats_.decisions.push_back(*opening);
  stats_.decisions.insert(stats_.decisions.end(), generated_.decisions.begin(), generated_.decisions.end());
  result_.text = generated_.text;
  result_.schema_answer = !tools_->format().named;
  result_.stopped_at_max_tokens = generated_.hit_token_limit;
  close_cut_object();
  stats_.call_ms = since_prefill();
  stats_.executable_ms = executable_ms(tracker_, stats_.events, stats_.call_ms);
}

void Answer::judge(const std::vector<ToolSpec>& all_tools) {
  if (result_.text_reply) return;
  try {
    result_.calls = calls(all_tools);
  } catch (const Error& e) {
    result_.error = std::string(e.what()) + (generated_.hit_token_limit ? " (stopped at max_tokens)" : "");
    return;
  }
  serial_events_.rest(result_.calls, stats_.call_ms);
  if (!serial_plans_) return;
  for (const ToolCall& call : result_.calls) {  // each call's plan, and its values for later plans
    const auto plan = serial_plans_->find(call.name);
    if (plan != serial_plans_->end()) stats_.plans.push_back(plan->second);
    remember_values(model_, planning_.history, call);
  }
}

std::optional<Decision> Answer::open() {
  const size_t answer_start = size_t(context_.used());
  const float* after_prompt = context_.last_logits();
  std::vector<float> prompt_logits(after_prompt, after_prompt + model_.vocab_size());
  // A reply that will be the schema's object is not told, nor stopped: its beginning is not kept.
  const bool in_schema = options_.answer_schema != nullptr;
  OpeningProbe probe(model_, tools_->tools(), chooser_, in_schema);
  generated_ = reply(probe, [&probe, in_schema] { return !in_schema && probe.decided_text(); });
  result_.text_reply = !probe.found_call();
  if (result_.text_reply && !in_schema) return std::nullopt;
  result_.logprobs.clear();  // the probe's tokens, which the answer does not keep
  if (probe.found_call()) write_as_opened(probe.text());
  const PassCounter passes = generated_.passes;
  if (passes.passes > 0) stats_.phases.push_back({"opening", passes.passes, passes.tokens, since_prefill()});
  count_passes(stats_, passes);
  context_.rewind(answer_start, std::move(prompt_logits));
  generated_ = {};
  return Decision{0, probe.margin()};
}

void Answer::write_as_opened(const std::string& opening) {
  if (options_.mode == DecodeMode::Free) return;  // free: the model writes it as it likes anyway
  const std::optional<JsonOpening> form = json_opening(opening, tools_->format(), tools_->tools());
  if (!form) return;
  opened_ = tools_->opened_as(form->fence, form->list);
  tools_ = opened_.get();
  tell_decided_text();  // the deltas, read in the form's format
}

GenerationResult Answer::reply(Strategy& strategy, std::function<bool()> is_text) {
  if (!options_.on_text && options_.stop.empty() && options_.logprobs < 0)
    return generate(context_, model_, strategy, options_.max_tokens, nullptr);
  ReplyText reply(strategy, model_, options_, std::move(is_text));
  GenerationResult generated = generate(context_, model_, reply, options_.max_tokens, nullptr);
  if (reply.stopped_at() != std::string::npos) generated.text.resize(reply.stopped_at());
  reply.finish();
  result_.logprobs = reply.logprobs();
  return generated;
}

void Answer::decode_serially() {
  const bool free = options_.mode == DecodeMode::Free;
  if (!free) {
    tracker_.on_close(
        [this](const std::string& object, double at_ms) { serial_events_.closed(object, tools_->format(), tools_->tools(), at_ms); });
  }
  // SchemaWeaver's turn whose every call the plan puts in serial passes is jump-forward's.
  const DecodeMode mode = options_.mode == DecodeMode::SchemaWeaver ? DecodeMode::JumpForward : options_.mode;
  std::unique_ptr<Strategy> strategy =
      make_strategy(mode, model_, free ? nullptr : tools_->calls(options_.max_calls), chooser_);
  generated_ = generate(context_, model_, *strategy, options_.max_tokens, &tracker_, drafter_);
  stats_.constraint_ms = strategy->constraint_ms();
  stats_.constraint_steps = strategy->constraint_steps();
  stats_.phases.push_back({"decode", generated_.passes.passes, generated_.passes.tokens, since_prefill()});
}

void Answer::close_cut_object() {
  if (!result_.schema_answer || !generated_.hit_token_limit || cut_in_branches_) return;
  Matcher matcher(tools_->calls(options_.max_calls));
  if (!matcher.advance(result_.text)) return;
  const std::string closing = matcher.shortest_completion();
  result_.text += closing;
  tracker_.feed(closing);
}

std::vector<ToolCall> Answer::calls(const std::vector<ToolSpec>& all_tools) const {
  if (!failure_.empty() && !generated_.hit_token_limit) throw Error(failure_);
  if (options_.mode == DecodeMode::SchemaWeaver && !serial_plans_ && failure_.empty()) return woven_calls_;
  std::vector<ToolCall> calls = tools_->format().parse(result_.text, all_tools);
  if (options_.mode != DecodeMode::Free) return calls;
  if (options_.max_calls > 0 && int(calls.size()) > options_.max_calls)
    throw Error(std::to_string(calls.size()) + " calls where at most " + std::to_string(options_.max_calls) +
                " are allowed");
  for (const ToolCall& call : calls) {
    const std::string why = schema_violation(all_tools, call);
    if (!why.empty()) throw Error("the call does not fit the schema: " + why);
  }
  return calls;
}

}  // namespace sw
