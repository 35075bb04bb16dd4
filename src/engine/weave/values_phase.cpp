#include "engine/weave/values_phase.h"

#include <algorithm>

namespace sw {
namespace {

// Every byte that may stand in a JSON string, the closing quote and escapes included: a
// matcher whose next bytes are exactly these is inside a string, where a token of plain string
// text is always accepted and leaves it there (no grammar needs to run for it).
ByteSet string_body_bytes() {
  ByteSet set;
  for (int c = 0x20; c < 256; ++c) set.set(size_t(c));
  return set;
}

// How much of a token belongs to a value.
struct Fit {
  enum Kind { No, Continues, Ends } kind = No;
  size_t used = 0;  // bytes of the token in the value (Ends may use fewer than all)
};

// A value ends where its grammar ends (a closing quote or bracket), or at the first token
// that cannot continue a value that could end there (a number): what the token holds beyond
// the value is the model's view of what follows, which the skeleton fixes anyway.
Fit fit(const LoadedModel& model, const Matcher& value, llama_token token) {
  const std::string& piece = model.pieces[size_t(token)];
  bool text = !piece.empty() && !model.is_atomic(token) && !model.is_end_of_generation(token);
  Matcher m = value;
  size_t used = text ? m.advance_prefix(piece) : 0;
  if (text && used == piece.size()) return {m.can_continue() ? Fit::Continues : Fit::Ends, used};
  if (m.can_end()) return {Fit::Ends, used};
  return {};
}

}  // namespace

Settled settle(const LoadedModel& model, const Matcher& value, llama_token token) {
  Fit f = fit(model, value, token);
  Settled s{model.pieces[size_t(token)].substr(0, f.used), value, f.kind == Fit::Ends};
  s.matcher.advance_prefix(s.text);
  if (s.done) return s;
  // Text the value's grammar forces to its end (the rest of an enum member, "rue" after "t")
  // needs no pass.
  std::string forced = s.matcher.forced_text();
  Matcher end = s.matcher;
  if (!forced.empty() && end.advance(forced) && !end.can_continue()) {
    s.text += forced;
    s.matcher = std::move(end);
    s.done = true;
  }
  return s;
}

ValuesPhase::ValuesPhase(WeaveTurn& turn) : turn_(turn), string_body_(string_body_bytes()) {}

std::vector<Branch> ValuesPhase::prefill_skeleton(const std::vector<const Property*>& args) {
  auto started = Clock::now();
  if (int(args.size()) > Context::kMaxBranches)
    throw Error("a call with " + std::to_string(args.size()) + " argument branches exceeds the limit of " +
                std::to_string(Context::kMaxBranches));
  turn_.skeleton = turn_.tools.skeleton(turn_.pending(), args);
  const Skeleton& skeleton = *turn_.skeleton;
  const size_t reused = turn_.keep_guess(skeleton.head);
  if (turn_.guessed && reused == 0) turn_.guess_failed = true;
  turn_.guessed = false;
  Context& context = turn_.context;
  const llama_pos start = llama_pos(context.used());
  std::vector<llama_seq_id> all{Context::kMain};
  for (size_t i = 0; i < args.size(); ++i) {
    llama_seq_id seq = llama_seq_id(1 + i);
    context.share_main(seq);
    all.push_back(seq);
  }
  std::vector<BatchToken> batch;
  for (size_t j = reused; j < skeleton.head.size(); ++j)
    batch.push_back({skeleton.head[j], start + llama_pos(j - reused), all, j + 1 == skeleton.head.size()});
  std::vector<Branch> branches;
  std::vector<int> last_index;
  for (size_t i = 0; i < args.size(); ++i) {
    const SkeletonBranch& sk = skeleton.branches[i];
    llama_pos pos = start + llama_pos(skeleton.head.size() - reused);
    for (size_t j = 0; j < sk.tokens.size(); ++j)
      batch.push_back({sk.tokens[j], pos++, {all[i + 1]}, j + 1 == sk.tokens.size()});
    last_index.push_back(int(batch.size()) - 1);
    auto grammar = turn_.tools.value(*sk.argument, sk.value_prefix);
    branches.push_back({&sk, all[i + 1], pos, grammar, Matcher(grammar), "", sk.tokens, {}, false, {}, {}, {}});
  }
  PassCounter passes;
  context.decode(batch, passes);
  for (size_t i = 0; i < branches.size(); ++i) keep_logits(branches[i], last_index[i]);
  turn_.result.generation.forced_passes += passes.passes;
  turn_.count("skeleton", passes, started);
  return branches;
}

void ValuesPhase::keep_logits(Branch& b, int index) {
  const float* logits = turn_.context.logits_at(index);
  b.logits.assign(logits, logits + turn_.model.vocab_size());
}

// The model's best token for the branch under its value's constraint; -1 if none fits.
llama_token ValuesPhase::pick(const Branch& b, float& margin) {
  auto started = Clock::now();
  const LoadedModel& model = turn_.model;
  const ByteSet next = b.matcher.next_bytes();
  const bool in_string = next == string_body_;
  const bool can_end = b.matcher.can_end();
  llama_token token = pick_greedy(
      b.logits.data(), model.vocab_size(),
      [&](llama_token t) {
        if (in_string && model.plain_string[size_t(t)]) return true;
        return fit(model, b.matcher, t).kind != Fit::No;
      },
      [&](llama_token t) {
        const std::string& piece = model.pieces[size_t(t)];
        return can_end || (!piece.empty() && next.test((unsigned char)piece[0]));
      },
      &margin);
  turn_.stats.constraint_ms += ms_between(started, Clock::now());
  turn_.stats.constraint_steps += 1;
  return token;
}

// Adds the token the model chose by `margin` to the value; the branch is done when its value
// is complete.
void ValuesPhase::apply(Branch& b, llama_token token, float margin) {
  b.decisions.push_back({b.text.size(), margin});
  b.picks.push_back(token);
  b.pick_at.push_back(b.cached.size() - b.skeleton->tokens.size());
  Settled s = settle(turn_.model, b.matcher, token);
  b.text += s.text;
  b.matcher = std::move(s.matcher);
  b.done = s.done;
}

bool ValuesPhase::decode(std::vector<Branch>& branches) {
  auto started = Clock::now();
  const LoadedModel& model = turn_.model;
  const WeaverOptions& options = turn_.options.weaver;
  WeaveResult& result = turn_.result;
  PassCounter passes;
  const llama_token placeholder = model.tokenize(" ", false).front();
  bool ok = true;
  while (ok) {
    std::vector<BatchToken> batch;
    std::vector<Carried> carried;
    for (Branch& b : branches) {
      if (b.done) continue;
      if (!options.parallel_values && !carried.empty()) break;
      float margin = kNoRival;
      llama_token token = pick(b, margin);
      if (token < 0) {
        result.failure = "no token fits the value of '" + b.skeleton->argument->name + "'";
        ok = false;
        break;
      }
      result.generation.sampled_tokens += 1;
      apply(b, token, margin);
      if (b.done) continue;
      // The text the value's grammar forces next rides in the same pass, as under jump-forward.
      const std::string& piece = model.pieces[size_t(token)];
      const std::vector<llama_token> tokens = jump_forward(model, b.matcher, token, piece);
      b.text += model.detokenize(tokens).substr(piece.size());
      for (size_t j = 0; j < tokens.size(); ++j)
        batch.push_back({tokens[j], b.next_pos++, {b.sequence}, j + 1 == tokens.size()});
      carried.push_back({&b, int(batch.size()) - 1, {}, 0});
      b.cached.insert(b.cached.end(), tokens.begin(), tokens.end());
    }
    if (!ok || batch.empty()) break;
    if (turn_.budget() <= 0) {
      result.generation.hit_token_limit = true;
      result.cut_in_branches = true;
      result.failure = "stopped at max_tokens";
      ok = false;
      break;
    }
    if (turn_.drafter) add_drafts(carried, batch);
    const int carrying = int(batch.size());
    int padded = options.padding && turn_.curve ? turn_.curve->padded_size(carrying) : carrying;
    for (int k = 0; int(batch.size()) < padded; ++k) batch.push_back({placeholder, k, {Context::kScratch}, false});
    turn_.context.decode(batch, passes);
    if (padded > carrying) turn_.context.drop(Context::kScratch);
    for (const Carried& c : carried) take_draft(c);
  }
  turn_.count("values", passes, started);
  return ok;
}

// Puts a guess of how branches go on behind their tokens: the continuation that followed
// the latest earlier occurrence of the branch's last tokens (in the prompt, the head or the
// branch), cut before the first token that would end the value or that its constraint
// rejects (an ending token needs no cell: it is checked on the logits before it). The
// values take as many passes as their longest branch, so a draft pays only on that path:
// a lone branch drafts as far as the cost curve says pays (as speculative decoding does);
// several branches only fill the places that the pass's cost leaves free (where padding
// would put placeholders), a draft token each in turn.
void ValuesPhase::add_drafts(std::vector<Carried>& carried, std::vector<BatchToken>& batch) {
  const int carrying = int(batch.size());
  const CostCurve* curve = turn_.curve;
  int room = std::min(turn_.budget() - carrying, curve ? curve->free_size(carrying) - carrying : 0);
  const bool lone = carried.size() == 1;
  if (!lone && room <= 0) return;
  // Each branch's history: the conversation's tokens (copied once), then the branch's own.
  std::vector<llama_token> history = turn_.context.history();
  const size_t shared = history.size();
  for (Carried& c : carried) {
    Branch& b = *c.branch;
    history.resize(shared);
    history.insert(history.end(), b.cached.begin(), b.cached.end());
    std::vector<llama_token> draft = lone ? turn_.drafter->propose(history, carrying, turn_.budget() - carrying)
                                          : lookup_continuation(history, std::min(room, Drafter::kMaxDraft));
    Matcher value = b.matcher;
    size_t admissible = 0;
    while (admissible < draft.size() && fit(turn_.model, value, draft[admissible]).kind == Fit::Continues)
      value.advance_prefix(turn_.model.pieces[size_t(draft[admissible++])]);
    c.draft.assign(draft.begin(), draft.begin() + long(admissible));
  }
  // Several branches: one draft token per branch in turn while free places last.
  if (!lone) {
    std::vector<size_t> share(carried.size(), 0);
    for (bool added = true; added && room > 0;) {
      added = false;
      for (size_t i = 0; i < carried.size() && room > 0; ++i) {
        if (share[i] < carried[i].draft.size()) ++share[i], --room, added = true;
      }
    }
    for (size_t i = 0; i < carried.size(); ++i) carried[i].draft.resize(share[i]);
  }
  for (Carried& c : carried) {
    c.draft_index = int(batch.size());
    for (size_t k = 0; k < c.draft.size(); ++k)
      batch.push_back({c.draft[k], c.branch->next_pos + llama_pos(k), {c.branch->sequence}, true});
  }
}

// After the pass: the branch takes the draft tokens that its constrained greedy choice
// agrees with, each moving it on without a pass of its own; the cells of the rest (and of a
// token that completed the value, which a value never keeps) are dropped.
void ValuesPhase::take_draft(const Carried& c) {
  Branch& b = *c.branch;
  GenerationResult& generation = turn_.result.generation;
  keep_logits(b, c.index);
  const llama_pos drafted_end = b.next_pos + llama_pos(c.draft.size());
  size_t taken = 0;
  float margin = kNoRival;
  while (taken < c.draft.size() && pick(b, margin) == c.draft[taken]) {
    llama_token token = c.draft[taken++];
    generation.sampled_tokens += 1;
    apply(b, token, margin);
    if (b.done) break;
    b.cached.push_back(token);
    keep_logits(b, c.draft_index + int(taken) - 1);
    ++b.next_pos;
  }
  if (b.next_pos < drafted_end) turn_.context.drop(b.sequence, b.next_pos);
  if (c.draft.empty()) return;
  int checked = int(std::min(c.draft.size(), taken + 1));
  generation.draft_tokens += checked;
  generation.accepted_draft_tokens += int(taken);
  turn_.drafter->record(checked, int(taken));
}

}  // namespace sw
