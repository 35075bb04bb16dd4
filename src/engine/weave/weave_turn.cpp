#include "engine/weave/weave_turn.h"

#include <algorithm>

namespace sw {

WeaveTurn::WeaveTurn(Context& conversation, const LoadedModel& loaded, const CompiledToolSet& tool_set,
                     const CallOptions& call_options, Planning planning, CallTracker& call_tracker,
                     Drafter* value_drafter, Chooser& call_chooser, CallStats& call_stats)
    : context(conversation), model(loaded), tools(tool_set), options(call_options), curve(planning.curve),
      history(planning.history), tracker(call_tracker), drafter(value_drafter), chooser(call_chooser),
      prompt_size(size_t(conversation.used())), stats(call_stats) {}

std::string WeaveTurn::pending() const { return text.substr(cached_text_size(context.decided())); }

size_t WeaveTurn::cached_text_size(size_t length) const {
  std::vector<llama_token> written(context.history().begin() + long(prompt_size),
                                   context.history().begin() + long(length));
  std::string in_cache = model.detokenize(written);
  if (text.compare(0, in_cache.size(), in_cache) != 0) throw Error("internal: the cache holds text the answer does not");
  return in_cache.size();
}

PhaseStats& WeaveTurn::phase(const std::string& name) {
  for (PhaseStats& p : stats.phases) {
    if (p.name == name) return p;
  }
  stats.phases.push_back({name});
  return stats.phases.back();
}

void WeaveTurn::count(const std::string& name, const PassCounter& passes, Clock::time_point started) {
  PhaseStats& p = phase(name);
  p.passes += passes.passes;
  p.tokens += passes.tokens;
  p.ms += ms_between(started, Clock::now());
  result.generation.passes.passes += passes.passes;
  result.generation.passes.tokens += passes.tokens;
}

void WeaveTurn::add_text(const std::string& more) {
  text += more;
  tracker.feed(more);
}

bool WeaveTurn::serial(const std::string& name, std::shared_ptr<const Grammar> grammar, const std::string& pending_text) {
  return serial(name, make_strategy(DecodeMode::JumpForward, model, std::move(grammar), chooser), pending_text);
}

bool WeaveTurn::serial(const std::string& name, std::unique_ptr<Strategy> strategy, const std::string& pending_text,
                       Drafter* phase_drafter) {
  auto started = Clock::now();
  tracker.skip(pending_text.size());
  text.resize(text.size() - pending_text.size());
  GenerationResult g = generate(context, model, *strategy, budget(), &tracker, phase_drafter);
  result.generation.draft_tokens += g.draft_tokens;
  result.generation.accepted_draft_tokens += g.accepted_draft_tokens;
  for (const Decision& d : g.decisions) result.generation.decisions.push_back({text.size() + d.offset, d.margin});
  text += g.text;
  result.generation.forced_passes += g.forced_passes;
  result.generation.sampled_tokens += g.sampled_tokens;
  stats.constraint_ms += strategy->constraint_ms();
  stats.constraint_steps += strategy->constraint_steps();
  count(name, g.passes, started);
  if (g.complete) return true;
  result.generation.hit_token_limit = g.hit_token_limit;
  result.failure = g.hit_token_limit ? "stopped at max_tokens" : "the model ended the answer inside a call";
  return false;
}

size_t WeaveTurn::keep_guess(const std::vector<llama_token>& tokens) {
  const std::vector<llama_token>& cached = context.history();
  const size_t from = context.decided();
  size_t same = 0;
  while (same < tokens.size() && from + same < cached.size() && cached[from + same] == tokens[same]) ++same;
  context.truncate(from + same);
  context.mark_guess(cached.size());
  return same;
}

std::vector<const Property*> branch_arguments(const ToolSpec& tool, const CallOptions& options) {
  std::vector<const Property*> args;
  for (const Property& p : tool.arguments) {
    const auto& given = options.given_arguments;
    bool wanted = given.empty() ? p.required : std::find(given.begin(), given.end(), p.name) != given.end();
    if (wanted) args.push_back(&p);
  }
  return args;
}

}  // namespace sw
