#include "engine/weave/write_back.h"

#include <algorithm>

namespace sw {
namespace {

Assembled assemble(const WeaveTurn& turn, const std::vector<Branch>& branches, const std::string& text) {
  const LoadedModel& model = turn.model;
  Assembled a{branches.front().cached, {}};
  for (size_t i = 0; i < branches.size(); ++i) {
    const Branch& b = branches[i];
    const auto value_begin = b.cached.begin() + long(b.skeleton->tokens.size());
    a.value_at.push_back(i == 0 ? b.skeleton->tokens.size() : a.tokens.size());
    if (i > 0) a.tokens.insert(a.tokens.end(), value_begin, b.cached.end());
    std::string seam = b.text.substr(std::min(b.text.size(), model.detokenize({value_begin, b.cached.end()}).size()));
    if (i + 1 < branches.size()) {
      const SkeletonBranch& next = *branches[i + 1].skeleton;
      if (next.value_prefix.size() > next.key_text.size()) return {};
      seam += turn.tools.format().arguments.separator +
              next.key_text.substr(0, next.key_text.size() - next.value_prefix.size());
    }
    std::vector<llama_token> seam_tokens = model.tokenize(seam, false);
    a.tokens.insert(a.tokens.end(), seam_tokens.begin(), seam_tokens.end());
  }
  if (model.detokenize(a.tokens) != text) return {};
  return a;
}

// The tokens that follow a call's required arguments (from the `held_back` text on) if no
// optional argument follows, the call is not the last of the turn and the next one uses the
// same tool (parallel calls: one lookup for several cities, dates, accounts), up to the next
// call's skeleton head. The strategies of the phases that write that text run over choices
// that spell it, so the guess is split into tokens as those phases split it.
std::vector<llama_token> next_call_guess(const WeaveTurn& turn, const ToolSpec& tool, const std::string& held_back) {
  const LoadedModel& model = turn.model;
  const CompiledToolSet& tools = turn.tools;
  const CallFormat& format = tools.format();
  auto tail = make_strategy(DecodeMode::JumpForward, model,
                            tools.tail(tool, held_back, turn.optional_arguments(), Members::Written, NextCall::Allowed));
  Spelled closed = spell(*tail, model, held_back + format.arguments.close + format.call_suffix + format.separator);
  if (!closed.complete) return closed.tokens;
  const std::string before = closed.unwritten;
  auto head = make_strategy(DecodeMode::JumpForward, model, tools.head(before));
  Spelled named = spell(*head, model, before + format.name_text(tool.name));
  std::vector<llama_token> tokens = std::move(closed.tokens);
  tokens.insert(tokens.end(), named.tokens.begin(), named.tokens.end());
  if (!named.complete) return tokens;
  auto next = tools.skeleton(named.unwritten + format.args_prefix + format.arguments.open, turn.branch_arguments(tool));
  tokens.insert(tokens.end(), next->head.begin(), next->head.end());
  return tokens;
}

}  // namespace

size_t deciding_token(const Assembled& a, const std::vector<Branch>& branches, size_t branch, size_t k) {
  return a.value_at[branch] + branches[branch].pick_at[k] - 1;
}

size_t first_checked_pick(const WeaveTurn& turn, const std::vector<Branch>& branches, size_t branch) {
  return branch == 0 && turn.adopts_first() ? branches[0].picks.size() - 1 : 0;
}

// The first branch's cells hold exactly what the call holds after the head (its argument comes
// first), so they are handed to the conversation instead of being computed again.
WriteBack write_back(WeaveTurn& turn, const std::vector<Branch>& branches, const ToolSpec* next_tool, bool check) {
  auto started = Clock::now();
  const LoadedModel& model = turn.model;
  Context& context = turn.context;
  std::string text = turn.pending();
  WriteBack w{assemble(turn, branches, text), size_t(context.used()), 0, false, {}};
  std::vector<llama_token>& tokens = w.call.tokens;
  std::string held_back;  // the call's text after the tokens written
  if (check && !tokens.empty()) {
    const size_t end = w.call.value_at.back() + branches.back().pick_at.back();
    w.rest.assign(tokens.begin() + long(end), tokens.end());
    held_back = model.detokenize(w.rest);
    tokens.resize(end);
    w.checked = true;
  } else {
    if (tokens.empty()) tokens = model.tokenize(text, false);
    std::string last = model.pieces[size_t(tokens.back())];
    const CallFormat& format = turn.tools.format();
    const ArgumentSyntax& syntax = format.arguments;
    const std::vector<std::string> after_value{syntax.close.empty() ? format.call_suffix : syntax.close,
                                               syntax.separator + syntax.key_opening()};
    if (tokens.size() > 1 && !cut_at_boundary(model, last, after_value).left.empty()) {
      held_back = last;
      tokens.pop_back();
    }
  }
  // Adopted cells: the first branch's, but at least one token is computed, for its logits -
  // unless the first branch's own last logits are those (verified, the tokens end with its
  // value: a call of one branch needs no pass here).
  const Branch& first = branches.front();
  size_t& adopt = w.adopted;
  const size_t computed_at_least = w.checked && first.cached.size() >= tokens.size() ? 0 : 1;
  // Unadopted, the first key's cells are still taken: the skeleton pass put them right after
  // the head's, where a serial decoder's lie; the value's cells came between other branches'.
  const size_t adoptable = turn.adopts_first() || w.call.value_at.empty()
                               ? tokens.size()
                               : std::max<size_t>(w.call.value_at[0], 1) - 1;
  while (adopt < adoptable && adopt + computed_at_least < tokens.size() && adopt < first.cached.size() &&
         tokens[adopt] == first.cached[adopt])
    ++adopt;
  context.adopt(first.sequence, {tokens.begin(), tokens.begin() + long(adopt)});
  for (const Branch& b : branches) context.drop(b.sequence);
  std::vector<llama_token> computed(tokens.begin() + long(adopt), tokens.end());
  if (computed.empty()) context.rewind(size_t(context.used()), first.logits);
  std::vector<bool> scored(computed.size(), false);
  if (w.checked) {
    for (size_t i = 0; i < branches.size(); ++i) {
      for (size_t k = first_checked_pick(turn, branches, i); k < branches[i].picks.size(); ++k) {
        size_t at = deciding_token(w.call, branches, i, k);
        if (at >= adopt) scored[at - adopt] = true;
      }
    }
    // Logits are read from the last pass only.
    if (computed.size() > size_t(context.batch_limit())) w.checked = false;
  }
  if (!scored.empty()) scored.back() = true;
  // A guess needs a pass to go into (and the logits before it).
  std::vector<llama_token> draft =
      next_tool && !computed.empty() ? next_call_guess(turn, *next_tool, held_back) : std::vector<llama_token>{};
  if (size_t(context.used()) + computed.size() + draft.size() > size_t(context.size())) draft.clear();
  computed.insert(computed.end(), draft.begin(), draft.end());
  scored.resize(computed.size(), true);
  PassCounter passes;
  context.append(computed, passes, scored);
  context.mark_guess(size_t(context.used()) - draft.size());
  turn.guessed = !draft.empty();
  turn.result.generation.forced_passes += passes.passes;
  turn.count("write-back", passes, started);
  return w;
}

}  // namespace sw
