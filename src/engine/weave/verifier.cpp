#include "engine/weave/verifier.h"

#include <algorithm>
#include <optional>

namespace sw {

Matcher reference_matcher(const WeaveTurn& turn, const ToolSpec& tool, NextCall next, size_t length) {
  // Where the call's head is not in the cache yet (a name no pass decided), the grammar starts
  // at `length` with the turn's text before the head.
  const size_t from = std::min(length, turn.call_start);
  Matcher m(turn.tools.reference(tool, turn.branch_arguments(tool), turn.optional_arguments(), next,
                                 turn.text.substr(from, turn.call_start - from)));
  if (!m.advance(std::string_view(turn.text).substr(from, length - from)))
    throw Error("internal: the call left its reference grammar");
  return m;
}

namespace {

// Whether the reference's `choice` for a branch's k-th pick makes the same value: the same
// token, or for the last pick, another token that ends the value with the same text (what
// it holds beyond the value is the skeleton's to write).
bool same_choice(const LoadedModel& model, const Branch& b, size_t k, llama_token choice) {
  if (choice == b.picks[k]) return true;
  if (choice < 0 || k + 1 < b.picks.size()) return false;
  Matcher before(b.grammar);
  before.advance(std::string_view(b.text).substr(0, b.decisions[k].offset));
  Settled theirs = settle(model, before, choice);
  return theirs.done && theirs.text == settle(model, before, b.picks[k]).text;
}

}  // namespace

Verdict verify(WeaveTurn& turn, const std::vector<Branch>& branches, const WriteBack& w, const ToolSpec& tool,
               NextCall next) {
  auto started = Clock::now();
  const LoadedModel& model = turn.model;
  Context& context = turn.context;
  VerificationStats& stats = turn.stats.verification;
  const std::vector<llama_token>& tokens = w.call.tokens;
  Matcher m = reference_matcher(turn, tool, next, turn.cached_text_size(w.head_end));
  size_t at = 0;  // tokens the matcher has consumed
  auto advance_to = [&](size_t index) {
    for (; at < index; ++at) {
      if (!m.advance(model.pieces[size_t(tokens[at])])) throw Error("internal: the call left its reference grammar");
    }
  };
  std::optional<size_t> cut;  // the first token that the reference chooses differently
  int discarded = 0;          // picks from there on
  llama_token last_choice = -1;
  for (size_t i = 0; i < branches.size() && !cut; ++i) {
    const Branch& b = branches[i];
    for (size_t k = first_checked_pick(turn, branches, i); k < b.picks.size(); ++k) {
      const size_t decider = deciding_token(w.call, branches, i, k);
      advance_to(decider + 1);
      const float* logits = decider >= w.adopted ? context.logits_after(w.head_end + decider + 1) : b.logits.data();
      stats.checked_tokens += 1;
      const llama_token choice = pick_constrained(model, m, logits, nullptr, turn.chooser);
      last_choice = choice;
      if (!same_choice(model, b, k, choice)) {
        turn.chooser.carry(choice);  // the serial reference writes on from this draw
        cut = decider + 1;
        for (size_t j = i; j < branches.size(); ++j) discarded += int(branches[j].picks.size());
        discarded -= int(k);
        stats.discarded_tokens += discarded;
        break;
      }
    }
  }
  if (!cut) advance_to(tokens.size());
  // The reference goes on from the cut, or makes the last value's last choice again - the very
  // draw that agreed with it, where the choices are drawn.
  turn.redecided += cut ? discarded : 1;
  if (!cut && last_choice >= 0) turn.chooser.carry(last_choice);
  Verdict v{m, bool(cut), {}};
  if (cut) {
    stats.repaired_calls += 1;
    v.rest.assign(tokens.begin() + long(*cut), tokens.end());
    v.rest.insert(v.rest.end(), w.rest.begin(), w.rest.end());
    const size_t length = w.head_end + *cut;
    if (*cut - 1 < w.adopted) context.rewind(length, branches.front().logits);
    else context.truncate(length);
    turn.guessed = false;
  }
  // What the cache does not hold is the reference's to write.
  turn.text.resize(turn.cached_text_size(context.decided()));
  auto& decisions = turn.result.generation.decisions;
  decisions.erase(std::remove_if(decisions.begin(), decisions.end(),
                                 [&](const Decision& d) { return d.offset >= turn.text.size(); }),
                  decisions.end());
  turn.phase("verify").ms += ms_between(started, Clock::now());
  return v;
}

}  // namespace sw
