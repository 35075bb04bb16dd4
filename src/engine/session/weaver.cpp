#include "engine/session/weaver.h"

#include <algorithm>
#include <optional>

#include "engine/toolset/tool_set.h"

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

// One required argument's value, decoded in its own sequence.
struct Branch {
  const SkeletonBranch* skeleton;
  llama_seq_id sequence;
  llama_pos next_pos;
  std::shared_ptr<const Grammar> grammar;  // of the value, after skeleton->value_prefix
  Matcher matcher;
  std::string text;                  // decoded so far, starting with skeleton->value_prefix
  std::vector<llama_token> cached;   // the tokens in the branch's cells after the head
  std::vector<float> logits;         // of the branch's last token
  bool done = false;
  // The tokens chosen, each with the text its grammar forced after it (jump-forward within the
  // branch); all but the last are in `cached`, as jump-forward tokenizes them (a pick may fuse
  // with the forced text after it).
  std::vector<llama_token> picks;
  std::vector<size_t> pick_at;       // per pick: where its tokens begin among the value's tokens
  std::vector<Decision> decisions;   // one per pick, offsets into `text`

  // The text of the value (without the skeleton's prefix), as the call's syntax writes it.
  std::string value() const { return text.substr(skeleton->value_prefix.size()); }
};

class Weaver {
 public:
  Weaver(Context& context, const LoadedModel& model, const CompiledToolSet& tools,
         const CallOptions& options, const CostCurve* curve, CallTracker& tracker, Drafter* drafter)
      : context_(context), model_(model), tools_(tools), options_(options), curve_(curve),
        tracker_(tracker), drafter_(drafter), prompt_size_(size_t(context.used())) {}

  WeaveResult run() {
    for (int index = 0;; ++index) {
      const ToolSpec* tool = choose_tool(index == 0);
      if (!tool || !weave_call(*tool, index)) break;
      if (!ends_with(turn_, tools_.format().separator)) break;
    }
    context_.truncate(size_t(context_.used() - draft_left_));  // a guess the turn did not take
    result_.generation.text = turn_;
    std::stable_sort(result_.generation.decisions.begin(), result_.generation.decisions.end(),
                     [](const Decision& a, const Decision& b) { return a.offset < b.offset; });
    return std::move(result_);
  }

 private:
  static bool ends_with(const std::string& text, const std::string& end) {
    return !end.empty() && text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
  }

  // max_tokens counts the answer's tokens that the model chose, as the serial modes count them:
  // not the choices a verification threw away or leaves to the reference to make again.
  int budget() const { return options_.max_tokens - (result_.generation.sampled_tokens - redecided_); }

  // The decided text that is not yet in the conversation's cache.
  std::string pending() const { return turn_.substr(cached_text_size(size_t(context_.used() - draft_left_))); }

  // The size of the answer's text that the conversation's first `length` tokens hold.
  size_t cached_text_size(size_t length) const {
    std::vector<llama_token> written(context_.history().begin() + long(prompt_size_),
                                     context_.history().begin() + long(length));
    std::string in_cache = model_.detokenize(written);
    if (turn_.compare(0, in_cache.size(), in_cache) != 0)
      throw Error("internal: the cache holds text the answer does not");
    return in_cache.size();
  }

  PhaseStats& phase(const std::string& name) {
    for (PhaseStats& p : result_.phases) {
      if (p.name == name) return p;
    }
    result_.phases.push_back({name});
    return result_.phases.back();
  }

  void count(const std::string& name, const PassCounter& passes, Clock::time_point started) {
    PhaseStats& p = phase(name);
    p.passes += passes.passes;
    p.tokens += passes.tokens;
    p.ms += ms_between(started, Clock::now());
    result_.generation.passes.passes += passes.passes;
    result_.generation.passes.tokens += passes.tokens;
  }

  void add_text(const std::string& text) {
    turn_ += text;
    tracker_.feed(text);
  }

  // Runs the serial decode loop (jump-forward) over `grammar`, whose text starts with what is
  // pending. Returns whether the grammar was completed.
  bool serial(const std::string& name, std::shared_ptr<const Grammar> grammar, const std::string& pending_text) {
    return serial(name, make_strategy(DecodeMode::JumpForward, model_, std::move(grammar)), pending_text);
  }

  // The same with a jump-forward `strategy` that starts where the cache's text ends, followed
  // by `pending_text`; a `drafter` offers drafts.
  bool serial(const std::string& name, std::unique_ptr<Strategy> strategy, const std::string& pending_text,
              Drafter* drafter = nullptr) {
    auto started = Clock::now();
    tracker_.skip(pending_text.size());
    turn_.resize(turn_.size() - pending_text.size());
    GenerationResult g = generate(context_, model_, *strategy, budget(), &tracker_, drafter, draft_left_);
    draft_left_ = g.draft_left;
    result_.generation.draft_tokens += g.draft_tokens;
    result_.generation.accepted_draft_tokens += g.accepted_draft_tokens;
    for (const Decision& d : g.decisions) result_.generation.decisions.push_back({turn_.size() + d.offset, d.margin});
    turn_ += g.text;
    result_.generation.forced_passes += g.forced_passes;
    result_.generation.sampled_tokens += g.sampled_tokens;
    result_.constraint_ms += strategy->constraint_ms();
    result_.constraint_steps += strategy->constraint_steps();
    count(name, g.passes, started);
    if (g.complete) return true;
    result_.generation.hit_token_limit = g.hit_token_limit;
    result_.failure = g.hit_token_limit ? "stopped at max_tokens" : "the model ended the answer inside a call";
    return false;
  }

  // The head phase decides the tool's name among the tools (one, if the caller chose it: its
  // name is then forced, and only how the model writes the format's opener is its choice, as
  // under jump-forward).
  const ToolSpec* choose_tool(bool first) {
    std::string opener = first ? tools_.format().opener : "";
    std::string before = pending();
    add_text(opener);
    call_start_ = turn_.size();
    if (!serial("name", tools_.head(before + opener), before + opener)) return nullptr;
    const CallFormat& format = tools_.format();
    const size_t name_at = call_start_ + format.name_prefix.size();
    if (turn_.compare(call_start_, format.name_prefix.size(), format.name_prefix) != 0 ||
        turn_.size() < name_at + format.name_suffix.size())
      throw Error("internal: the name grammar wrote no call head");
    const ToolSpec* tool = tools_.find(turn_.substr(name_at, turn_.size() - name_at - format.name_suffix.size()));
    if (!tool) throw Error("internal: the name grammar allowed an unknown tool");
    return tool;
  }

  std::vector<const Property*> branch_arguments(const ToolSpec& tool) const {
    std::vector<const Property*> args;
    for (const Property& p : tool.arguments) {
      const auto& given = options_.given_arguments;
      bool wanted = given.empty() ? p.required : std::find(given.begin(), given.end(), p.name) != given.end();
      if (wanted) args.push_back(&p);
    }
    return args;
  }

  // Whether optional arguments are decided after the branches: not when the caller gave the
  // argument set.
  bool with_optional() const { return options_.given_arguments.empty(); }
  bool decides_later(const ToolSpec& tool) const {
    return with_optional() &&
           std::any_of(tool.arguments.begin(), tool.arguments.end(), [](const Property& p) { return !p.required; });
  }

  void emit(CallEvent::Kind kind, int index, ToolCall call, double at_ms, bool replaces = false) {
    CallEvent event{kind, index, std::move(call), at_ms, replaces};
    if (options_.on_call) options_.on_call(event);
    result_.events.push_back(std::move(event));
  }

  bool weave_call(const ToolSpec& tool, int index) {
    std::vector<const Property*> args = branch_arguments(tool);
    const bool later = decides_later(tool);
    const ArgumentSyntax& syntax = tools_.format().arguments;
    add_text(tools_.format().args_prefix + (args.empty() ? "" : syntax.open));
    std::optional<ToolCall> provisional;
    bool final_emitted = false;
    const bool last_call = options_.max_calls > 0 && index + 1 >= options_.max_calls;
    std::optional<Verdict> verdict;
    if (!args.empty()) {
      std::vector<Branch> branches = prefill_skeleton(args);
      if (!decode_values(branches)) return false;
      std::string members;
      Json values = Json::object();
      for (const Branch& b : branches) {
        members += &b == &branches.front() ? "" : syntax.separator;
        // The branch's text starts with the end of its key (the value prefix).
        const size_t text_at = turn_.size() + members.size() + b.skeleton->key_text.size() -
                               b.skeleton->value_prefix.size();
        for (const Decision& d : b.decisions) result_.generation.decisions.push_back({text_at + d.offset, d.margin});
        members += b.skeleton->key_text + b.value();
        std::optional<Json> value = read_decoded(b.value(), b.skeleton->argument->schema);
        if (!value) return false;
        values[b.skeleton->argument->name] = std::move(*value);
      }
      const size_t untracked = turn_.size();  // the tracker sees the call once it stands
      turn_ += members;
      ToolCall call{tool.name, std::move(values)};
      double at = ms_between(tracker_.origin(), Clock::now());
      const bool verifying = options_.weaver.verify;
      if (!later && !verifying) {
        emit(CallEvent::Kind::Final, index, call, at);
        final_emitted = true;
      } else if (tool.read_only && options_.weaver.provisional) {
        emit(CallEvent::Kind::Provisional, index, call, at);
        provisional = call;
      }
      // A guess costs its tokens in the pass, which a turn of one call wastes: guess once the
      // turn has shown several calls, and stop after a guess that was not taken.
      bool guess = options_.weaver.whole_turn && !last_call && index >= 1 && !guess_failed_;
      WriteBack written = write_back(branches, guess ? &tool : nullptr, verifying);
      if (written.checked) {
        verdict = verify(branches, written, tool, last_call);
        if (!verdict->repaired && !later) {
          // A provisional call that stands was executable when it was emitted.
          emit(CallEvent::Kind::Final, index, call,
               provisional ? result_.events.back().at_ms : ms_between(tracker_.origin(), Clock::now()));
          final_emitted = true;
        }
      } else if (verifying) {
        result_.verification.unverified_calls += 1;
      }
      tracker_.feed(turn_.substr(untracked));
    }
    if (verdict) {
      // The serial reference writes the rest of the call from where its choices stand.
      std::unique_ptr<Drafter> drafter;
      if (verdict->repaired) drafter = std::make_unique<ReferenceLookup>(curve_, verdict->rest);
      if (!serial(verdict->repaired ? "repair" : "optional", make_jump_forward(model_, verdict->reference), "",
                  drafter.get()))
        return false;
    } else {
      std::string rest = pending();
      if (!serial("optional", tools_.tail(tool, rest, with_optional(), !args.empty(), last_call), rest))
        return false;
    }
    if (!final_emitted) {
      std::optional<ToolCall> closed = call_at(tool);
      if (!closed) return false;
      const ToolCall& call = *closed;
      double at = index < int(tracker_.closed_ms().size()) ? tracker_.closed_ms()[size_t(index)]
                                                            : ms_between(tracker_.origin(), Clock::now());
      bool replaces = provisional && !(*provisional == call);
      emit(CallEvent::Kind::Final, index, call, replaces || !provisional ? at : result_.events.back().at_ms, replaces);
    }
    return true;
  }

  // A decoded value's text. The grammars keep its shape, not its content: a number beyond a
  // double's range or a string of bytes that are not UTF-8 fails here, and the answer is not a call.
  std::optional<Json> read_decoded(const std::string& text, const Schema& schema) {
    std::optional<Json> value = tools_.format().arguments.read_value(text, &schema);
    if (!value) result_.failure = kNotAValue;
    return value;
  }
  static constexpr const char* kNotAValue = "the call is not valid JSON (a number out of range or text that is not UTF-8)";

  // The call of `tool` the turn holds from call_start_ on.
  std::optional<ToolCall> call_at(const ToolSpec& tool) {
    const size_t begin = call_start_ + tools_.format().call_head(tool.name).size();
    try {
      return ToolCall{tool.name, tools_.format().arguments_at(turn_, begin, &tool).first};
    } catch (const Error&) {
      result_.failure = kNotAValue;
      return std::nullopt;
    }
  }

  // The skeleton in one pass: the head in the conversation and in every branch (its cells
  // tagged with all their sequences), each branch's argument name in its own sequence.
  std::vector<Branch> prefill_skeleton(const std::vector<const Property*>& args) {
    auto started = Clock::now();
    if (int(args.size()) > Context::kMaxBranches)
      throw Error("a call with " + std::to_string(args.size()) + " argument branches exceeds the limit of " +
                  std::to_string(Context::kMaxBranches));
    skeleton_ = tools_.skeleton(pending(), args);
    const size_t reused = keep_guess(skeleton_->head);
    if (guessed_ && reused == 0) guess_failed_ = true;
    guessed_ = false;
    const llama_pos start = llama_pos(context_.used());
    std::vector<llama_seq_id> all{Context::kMain};
    for (size_t i = 0; i < args.size(); ++i) {
      llama_seq_id seq = llama_seq_id(1 + i);
      context_.share_main(seq);
      all.push_back(seq);
    }
    std::vector<BatchToken> batch;
    for (size_t j = reused; j < skeleton_->head.size(); ++j)
      batch.push_back({skeleton_->head[j], start + llama_pos(j - reused), all, j + 1 == skeleton_->head.size()});
    std::vector<Branch> branches;
    std::vector<int> last_index;
    for (size_t i = 0; i < args.size(); ++i) {
      const SkeletonBranch& sk = skeleton_->branches[i];
      llama_pos pos = start + llama_pos(skeleton_->head.size() - reused);
      for (size_t j = 0; j < sk.tokens.size(); ++j)
        batch.push_back({sk.tokens[j], pos++, {all[i + 1]}, j + 1 == sk.tokens.size()});
      last_index.push_back(int(batch.size()) - 1);
      auto grammar = tools_.value(*sk.argument, sk.value_prefix);
      branches.push_back({&sk, all[i + 1], pos, grammar, Matcher(grammar), "", sk.tokens, {}, false, {}, {}, {}});
    }
    PassCounter passes;
    context_.decode(batch, passes);
    for (size_t i = 0; i < branches.size(); ++i) keep_logits(branches[i], last_index[i]);
    result_.generation.forced_passes += passes.passes;
    count("skeleton", passes, started);
    return branches;
  }

  // Keeps the leading tokens of a guess in the cache that equal `tokens`, text that the answer
  // holds here whatever the model's logits say, and removes the rest of the guess. Returns how
  // many were kept.
  size_t keep_guess(const std::vector<llama_token>& tokens) {
    const std::vector<llama_token>& history = context_.history();
    const size_t from = history.size() - size_t(draft_left_);
    size_t same = 0;
    while (same < tokens.size() && from + same < history.size() && history[from + same] == tokens[same]) ++same;
    context_.truncate(from + same);
    draft_left_ = 0;
    return same;
  }

  // The tokens that follow a call's required arguments (from the `held_back` text on) if no
  // optional argument follows, the call is not the last of the turn and the next one uses the
  // same tool (parallel calls: one lookup for several cities, dates, accounts), up to the next
  // call's skeleton head. The strategies of the phases that write that text run over choices
  // that spell it, so the guess is split into tokens as those phases split it.
  std::vector<llama_token> next_call_guess(const ToolSpec& tool, const std::string& held_back) const {
    auto tail = make_strategy(DecodeMode::JumpForward, model_, tools_.tail(tool, held_back, with_optional(), true, false));
    const CallFormat& format = tools_.format();
    Spelled closed = spell(*tail, model_, held_back + format.arguments.close + format.call_suffix + format.separator);
    if (!closed.complete) return closed.tokens;
    const std::string before = closed.unwritten;
    auto head = make_strategy(DecodeMode::JumpForward, model_, tools_.head(before));
    Spelled named = spell(*head, model_, before + format.name_prefix + tool.name + format.name_suffix);
    std::vector<llama_token> tokens = std::move(closed.tokens);
    tokens.insert(tokens.end(), named.tokens.begin(), named.tokens.end());
    if (!named.complete) return tokens;
    auto next = tools_.skeleton(named.unwritten + format.args_prefix + format.arguments.open, branch_arguments(tool));
    tokens.insert(tokens.end(), next->head.begin(), next->head.end());
    return tokens;
  }

  void keep_logits(Branch& b, int index) {
    const float* logits = context_.logits_at(index);
    b.logits.assign(logits, logits + model_.vocab_size());
  }

  // A value ends where its grammar ends (a closing quote or bracket), or at the first token
  // that cannot continue a value that could end there (a number): what the token holds beyond
  // the value is the model's view of what follows, which the skeleton fixes anyway.
  Fit fit(const Matcher& value, llama_token token) const {
    const std::string& piece = model_.pieces[size_t(token)];
    bool text = !piece.empty() && !model_.is_atomic(token) && !model_.is_end_of_generation(token);
    Matcher m = value;
    size_t used = text ? m.advance_prefix(piece) : 0;
    if (text && used == piece.size()) return {m.can_continue() ? Fit::Continues : Fit::Ends, used};
    if (m.can_end()) return {Fit::Ends, used};
    return {};
  }

  // The model's best token for the branch under its value's constraint; -1 if none fits.
  llama_token pick(const Branch& b, float& margin) {
    auto started = Clock::now();
    const ByteSet next = b.matcher.next_bytes();
    const bool in_string = next == string_body_;
    const bool can_end = b.matcher.can_end();
    llama_token token = pick_greedy(
        b.logits.data(), model_.vocab_size(), order_,
        [&](llama_token t) {
          if (in_string && model_.plain_string[size_t(t)]) return true;
          return fit(b.matcher, t).kind != Fit::No;
        },
        [&](llama_token t) {
          const std::string& piece = model_.pieces[size_t(t)];
          return can_end || (!piece.empty() && next.test((unsigned char)piece[0]));
        },
        &margin);
    result_.constraint_ms += ms_between(started, Clock::now());
    result_.constraint_steps += 1;
    return token;
  }

  // What choosing `token` makes of a value whose matcher stands at `value`.
  struct Settled {
    std::string text;  // the bytes the token adds to the value
    Matcher matcher;   // after them
    bool done;         // the value is complete
  };

  Settled settle(const Matcher& value, llama_token token) const {
    Fit f = fit(value, token);
    Settled s{model_.pieces[size_t(token)].substr(0, f.used), value, f.kind == Fit::Ends};
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

  // Adds the token the model chose by `margin` to the value; the branch is done when its value
  // is complete.
  void apply(Branch& b, llama_token token, float margin) {
    b.decisions.push_back({b.text.size(), margin});
    b.picks.push_back(token);
    b.pick_at.push_back(b.cached.size() - b.skeleton->tokens.size());
    Settled s = settle(b.matcher, token);
    b.text += s.text;
    b.matcher = std::move(s.matcher);
    b.done = s.done;
  }

  // A branch's part of one pass: its next token at `index` of the batch, and a draft from
  // `draft_index` on.
  struct Carried {
    Branch* branch;
    int index;
    std::vector<llama_token> draft;
    int draft_index = 0;
  };

  bool decode_values(std::vector<Branch>& branches) {
    auto started = Clock::now();
    PassCounter passes;
    const llama_token placeholder = model_.tokenize(" ", false).front();
    bool ok = true;
    while (ok) {
      std::vector<BatchToken> batch;
      std::vector<Carried> carried;
      for (Branch& b : branches) {
        if (b.done) continue;
        if (!options_.weaver.parallel_values && !carried.empty()) break;
        float margin = kNoRival;
        llama_token token = pick(b, margin);
        if (token < 0) {
          result_.failure = "no token fits the value of '" + b.skeleton->argument->name + "'";
          ok = false;
          break;
        }
        result_.generation.sampled_tokens += 1;
        apply(b, token, margin);
        if (b.done) continue;
        // The text the value's grammar forces next rides in the same pass, as under jump-forward.
        const std::string& piece = model_.pieces[size_t(token)];
        const std::vector<llama_token> tokens = jump_forward(model_, b.matcher, token, piece);
        b.text += model_.detokenize(tokens).substr(piece.size());
        for (size_t j = 0; j < tokens.size(); ++j)
          batch.push_back({tokens[j], b.next_pos++, {b.sequence}, j + 1 == tokens.size()});
        carried.push_back({&b, int(batch.size()) - 1, {}, 0});
        b.cached.insert(b.cached.end(), tokens.begin(), tokens.end());
      }
      if (!ok || batch.empty()) break;
      if (budget() <= 0) {
        result_.generation.hit_token_limit = true;
        result_.failure = "stopped at max_tokens";
        ok = false;
        break;
      }
      if (drafter_) add_drafts(carried, batch);
      const int carrying = int(batch.size());
      int padded = options_.weaver.padding && curve_ ? curve_->padded_size(carrying) : carrying;
      for (int k = 0; int(batch.size()) < padded; ++k) batch.push_back({placeholder, k, {Context::kScratch}, false});
      context_.decode(batch, passes);
      if (padded > carrying) context_.drop(Context::kScratch);
      for (const Carried& c : carried) take_draft(c);
    }
    count("values", passes, started);
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
  void add_drafts(std::vector<Carried>& carried, std::vector<BatchToken>& batch) {
    const int carrying = int(batch.size());
    int room = std::min(budget() - carrying, curve_ ? curve_->free_size(carrying) - carrying : 0);
    const bool lone = carried.size() == 1;
    if (!lone && room <= 0) return;
    // Each branch's history: the conversation's tokens (copied once), then the branch's own.
    std::vector<llama_token> history = context_.history();
    const size_t shared = history.size();
    for (Carried& c : carried) {
      Branch& b = *c.branch;
      history.resize(shared);
      history.insert(history.end(), b.cached.begin(), b.cached.end());
      std::vector<llama_token> draft = lone ? drafter_->propose(history, carrying, budget() - carrying)
                                            : lookup_continuation(history, std::min(room, Drafter::kMaxDraft));
      Matcher value = b.matcher;
      size_t admissible = 0;
      while (admissible < draft.size() && fit(value, draft[admissible]).kind == Fit::Continues)
        value.advance_prefix(model_.pieces[size_t(draft[admissible++])]);
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
  void take_draft(const Carried& c) {
    Branch& b = *c.branch;
    keep_logits(b, c.index);
    const llama_pos drafted_end = b.next_pos + llama_pos(c.draft.size());
    size_t taken = 0;
    float margin = kNoRival;
    while (taken < c.draft.size() && pick(b, margin) == c.draft[taken]) {
      llama_token token = c.draft[taken++];
      result_.generation.sampled_tokens += 1;
      apply(b, token, margin);
      if (b.done) break;
      b.cached.push_back(token);
      keep_logits(b, c.draft_index + int(taken) - 1);
      ++b.next_pos;
    }
    if (b.next_pos < drafted_end) context_.drop(b.sequence, b.next_pos);
    if (c.draft.empty()) return;
    int checked = int(std::min(c.draft.size(), taken + 1));
    result_.generation.draft_tokens += checked;
    result_.generation.accepted_draft_tokens += int(taken);
    drafter_->record(checked, int(taken));
  }

  // The assembled call's tokens after the head: the tokens the branches sampled for their
  // values, as a serial decoder would have them in its cache, and the text between them (a
  // value's last token, which never had a pass, then the separator and the next argument's name)
  // tokenized as one piece so that the tokenizer fuses across that seam ('",' is one token).
  struct Assembled {
    std::vector<llama_token> tokens;  // empty if the pieces do not add up to the call's text
    std::vector<size_t> value_at;     // per branch: where the tokens of its value start
  };

  Assembled assemble(const std::vector<Branch>& branches, const std::string& text) const {
    Assembled a{branches.front().cached, {}};
    for (size_t i = 0; i < branches.size(); ++i) {
      const Branch& b = branches[i];
      const auto value_begin = b.cached.begin() + long(b.skeleton->tokens.size());
      a.value_at.push_back(i == 0 ? b.skeleton->tokens.size() : a.tokens.size());
      if (i > 0) a.tokens.insert(a.tokens.end(), value_begin, b.cached.end());
      std::string seam = b.text.substr(std::min(b.text.size(), model_.detokenize({value_begin, b.cached.end()}).size()));
      if (i + 1 < branches.size()) {
        const SkeletonBranch& next = *branches[i + 1].skeleton;
        if (next.value_prefix.size() > next.key_text.size()) return {};
        seam += tools_.format().arguments.separator + next.key_text.substr(0, next.key_text.size() - next.value_prefix.size());
      }
      std::vector<llama_token> seam_tokens = model_.tokenize(seam, false);
      a.tokens.insert(a.tokens.end(), seam_tokens.begin(), seam_tokens.end());
    }
    if (model_.detokenize(a.tokens) != text) return {};
    return a;
  }

  // The index of the token whose logits decide a branch's k-th pick (the token before it);
  // the last pick's token is the first of the seam after the value.
  static size_t deciding_token(const Assembled& a, const std::vector<Branch>& branches, size_t branch, size_t k) {
    return a.value_at[branch] + branches[branch].pick_at[k] - 1;
  }

  // The first pick of a branch that verification checks: the first branch saw exactly what the
  // conversation holds, so where its cells are adopted only its last pick (how its value ends)
  // can differ from the reference's; every pick of the others, and of a first branch computed
  // again (its cells' logits are new).
  size_t first_checked_pick(const std::vector<Branch>& branches, size_t branch) const {
    return branch == 0 && options_.weaver.adopt_first ? branches[0].picks.size() - 1 : 0;
  }

  // What the write-back put into the conversation after the head.
  struct WriteBack {
    Assembled call;             // checked: the tokens written, up to the last value's last token
    size_t head_end = 0;        // the conversation's length before them
    size_t adopted = 0;         // of them, taken from the first branch's cells (no logits)
    bool checked = false;       // the logits of every choice to verify were kept
    std::vector<llama_token> rest;  // checked: the assembled call's tokens after those written
  };

  // Drops the branches and prefills the assembled call into the conversation in one pass. The
  // first branch's cells hold exactly what the call holds after the head (its argument comes
  // first), so they are handed to the conversation instead of being computed again.
  //
  // Verified (`check`), the pass keeps the logits where the branches made a choice that the
  // serial reference may make differently (see verify) and stops after the last value's last
  // token: how the last value ends is the reference's choice. Unverified, the prefill stops at
  // a token boundary that what may follow (the end of the arguments, or another argument)
  // cannot move: where the tokenizer would fuse the value's end with that ('"}' is one token),
  // the end is left to the serial decision after the values.
  //
  // With a `next_tool`, a guess of the turn going on with a call of it goes into the same pass,
  // behind the call, as a draft that the phases after it check (WeaverOptions::whole_turn).
  WriteBack write_back(const std::vector<Branch>& branches, const ToolSpec* next_tool, bool check) {
    auto started = Clock::now();
    std::string text = pending();
    WriteBack w{assemble(branches, text), size_t(context_.used()), 0, false, {}};
    std::vector<llama_token>& tokens = w.call.tokens;
    std::string held_back;  // the call's text after the tokens written
    if (check && !tokens.empty()) {
      const size_t end = w.call.value_at.back() + branches.back().pick_at.back();
      w.rest.assign(tokens.begin() + long(end), tokens.end());
      held_back = model_.detokenize(w.rest);
      tokens.resize(end);
      w.checked = true;
    } else {
      if (tokens.empty()) tokens = model_.tokenize(text, false);
      std::string last = model_.pieces[size_t(tokens.back())];
      const CallFormat& format = tools_.format();
      const ArgumentSyntax& syntax = format.arguments;
      const std::vector<std::string> after_value{syntax.close.empty() ? format.call_suffix : syntax.close,
                                                 syntax.separator + syntax.key_opening()};
      if (tokens.size() > 1 && !cut_at_boundary(model_, last, after_value).left.empty()) {
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
    const size_t adoptable = options_.weaver.adopt_first || w.call.value_at.empty()
                                 ? tokens.size()
                                 : std::max<size_t>(w.call.value_at[0], 1) - 1;
    while (adopt < adoptable && adopt + computed_at_least < tokens.size() && adopt < first.cached.size() &&
           tokens[adopt] == first.cached[adopt])
      ++adopt;
    context_.adopt(first.sequence, {tokens.begin(), tokens.begin() + long(adopt)});
    for (const Branch& b : branches) context_.drop(b.sequence);
    std::vector<llama_token> computed(tokens.begin() + long(adopt), tokens.end());
    if (computed.empty()) context_.rewind(size_t(context_.used()), first.logits);
    std::vector<bool> scored(computed.size(), false);
    if (w.checked) {
      for (size_t i = 0; i < branches.size(); ++i) {
        for (size_t k = first_checked_pick(branches, i); k < branches[i].picks.size(); ++k) {
          size_t at = deciding_token(w.call, branches, i, k);
          if (at >= adopt) scored[at - adopt] = true;
        }
      }
      // Logits are read from the last pass only.
      if (computed.size() > size_t(context_.batch_limit())) w.checked = false;
    }
    if (!scored.empty()) scored.back() = true;
    // A guess needs a pass to go into (and the logits before it).
    std::vector<llama_token> draft =
        next_tool && !computed.empty() ? next_call_guess(*next_tool, held_back) : std::vector<llama_token>{};
    if (size_t(context_.used()) + computed.size() + draft.size() > size_t(context_.size())) draft.clear();
    computed.insert(computed.end(), draft.begin(), draft.end());
    scored.resize(computed.size(), true);
    PassCounter passes;
    context_.append(computed, passes, scored);
    draft_left_ = int(draft.size());
    guessed_ = !draft.empty();
    result_.generation.forced_passes += passes.passes;
    count("write-back", passes, started);
    return w;
  }

  // The serial reference's matcher for the current call, standing after the first `length`
  // bytes of the answer: jump-forward over the call's grammar, the arguments in the order the
  // weaver writes them (the branches' first, then the later ones).
  Matcher reference_matcher(const ToolSpec& tool, bool last_call, size_t length) const {
    Matcher m(tools_.reference(tool, branch_arguments(tool), with_optional(), last_call));
    if (!m.advance(std::string_view(turn_).substr(call_start_, length - call_start_)))
      throw Error("internal: the call left its reference grammar");
    return m;
  }

  // Whether the reference's `choice` for a branch's k-th pick makes the same value: the same
  // token, or for the last pick, another token that ends the value with the same text (what
  // it holds beyond the value is the skeleton's to write).
  bool same_choice(const Branch& b, size_t k, llama_token choice) const {
    if (choice == b.picks[k]) return true;
    if (choice < 0 || k + 1 < b.picks.size()) return false;
    Matcher before(b.grammar);
    before.advance(std::string_view(b.text).substr(0, b.decisions[k].offset));
    Settled theirs = settle(before, choice);
    return theirs.done && theirs.text == settle(before, b.picks[k]).text;
  }

  struct Verdict {
    Matcher reference;  // the serial reference's matcher where the call stands now
    bool repaired = false;
    std::vector<llama_token> rest;  // the assembled call's tokens after where it stands
  };

  // Lossless SchemaWeaver: the branches' values are a draft of the call, checked on the logits
  // of the write-back pass, where every value token sees the whole call before it. Each choice
  // is compared with the serial reference's (constrained greedy over the call's grammar); the
  // call is kept up to the first disagreement and the cache cut there. Returns where
  // the reference goes on from, with the rest of the assembled call as its draft.
  Verdict verify(const std::vector<Branch>& branches, const WriteBack& w, const ToolSpec& tool, bool last_call) {
    auto started = Clock::now();
    const std::vector<llama_token>& tokens = w.call.tokens;
    Matcher m = reference_matcher(tool, last_call, cached_text_size(w.head_end));
    size_t at = 0;  // tokens the matcher has consumed
    auto advance_to = [&](size_t index) {
      for (; at < index; ++at) {
        if (!m.advance(model_.pieces[size_t(tokens[at])])) throw Error("internal: the call left its reference grammar");
      }
    };
    std::optional<size_t> cut;  // the first token that the reference chooses differently
    int discarded = 0;          // picks from there on
    for (size_t i = 0; i < branches.size() && !cut; ++i) {
      const Branch& b = branches[i];
      for (size_t k = first_checked_pick(branches, i); k < b.picks.size(); ++k) {
        const size_t decider = deciding_token(w.call, branches, i, k);
        advance_to(decider + 1);
        const float* logits = decider >= w.adopted ? context_.logits_after(w.head_end + decider + 1) : b.logits.data();
        result_.verification.checked_tokens += 1;
        if (!same_choice(b, k, pick_constrained(model_, m, logits, order_))) {
          cut = decider + 1;
          for (size_t j = i; j < branches.size(); ++j) discarded += int(branches[j].picks.size());
          discarded -= int(k);
          result_.verification.discarded_tokens += discarded;
          break;
        }
      }
    }
    if (!cut) advance_to(tokens.size());
    // The reference goes on from the cut, or makes the last value's last choice again.
    redecided_ += cut ? discarded : 1;
    Verdict v{m, bool(cut), {}};
    if (cut) {
      result_.verification.repaired_calls += 1;
      v.rest.assign(tokens.begin() + long(*cut), tokens.end());
      v.rest.insert(v.rest.end(), w.rest.begin(), w.rest.end());
      const size_t length = w.head_end + *cut;
      if (*cut - 1 < w.adopted) context_.rewind(length, branches.front().logits);
      else context_.truncate(length);
      draft_left_ = 0;
      guessed_ = false;
    }
    // What the cache does not hold is the reference's to write.
    turn_.resize(cached_text_size(size_t(context_.used() - draft_left_)));
    auto& decisions = result_.generation.decisions;
    decisions.erase(std::remove_if(decisions.begin(), decisions.end(),
                                   [&](const Decision& d) { return d.offset >= turn_.size(); }),
                    decisions.end());
    phase("verify").ms += ms_between(started, Clock::now());
    return v;
  }

  Context& context_;
  const LoadedModel& model_;
  const CompiledToolSet& tools_;
  const CallOptions& options_;
  const CostCurve* curve_;
  CallTracker& tracker_;
  Drafter* drafter_;
  const size_t prompt_size_;
  const ByteSet string_body_ = string_body_bytes();
  std::string turn_;        // the answer decided so far
  size_t call_start_ = 0;   // where the current call's JSON object starts in turn_
  int draft_left_ = 0;      // the last tokens in the cache are a guess not yet checked
  int redecided_ = 0;       // picks of the branches that the answer does not keep
  bool guessed_ = false;       // the current call's start was guessed at the last write-back
  bool guess_failed_ = false;  // a guess of this turn was not taken
  std::shared_ptr<const Skeleton> skeleton_;  // of the current call
  std::vector<llama_token> order_;
  WeaveResult result_;
};

}  // namespace

WeaveResult weave(Context& context, const LoadedModel& model, const CompiledToolSet& tools,
                  const CallOptions& options, const CostCurve* curve, CallTracker& tracker, Drafter* drafter) {
  return Weaver(context, model, tools, options, curve, tracker, drafter).run();
}

}  // namespace sw
