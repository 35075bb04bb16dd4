#include "engine/weave/weaver.h"

#include <algorithm>
#include <optional>

#include "engine/weave/verifier.h"

namespace sw {
namespace {

constexpr const char* kNotAValue = "the call is not valid JSON (a number out of range or text that is not UTF-8)";

bool ends_with(const std::string& text, const std::string& end) {
  return !end.empty() && text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// Whether the plan prices calls by cost: unless the caller asked for branches always, the
// values one branch after another, or no pass cost is known yet (the branches then).
bool plans_by_cost(const CallOptions& options, const CostCurve* curve) {
  return options.weaver.plan_by_cost && options.weaver.parallel_values && curve;
}

// A call of `tool` with `args` in branches priced against the same call decoded serially, from
// what passes cost now; `pending`: the text before the values that the cache does not hold.
PlanStats price_call(const LoadedModel& model, const CompiledToolSet& tools, Planning planning, const ToolSpec& tool,
                     const std::vector<const Property*>& args, const std::string& pending, PlanShape shape) {
  // Token counts, not the skeleton: a serial plan needs no skeleton.
  const ArgumentSyntax& syntax = tools.format().arguments;
  std::vector<int> names;
  std::vector<ValueEstimate> values;
  for (const Property* p : args) {
    names.push_back(int(model.tokenize(syntax.key_text(p->name), false).size()));
    values.push_back(expected_value(model, planning.history, tool.name, *p));
  }
  PlanCost cost = plan_cost(*planning.curve, int(model.tokenize(pending, false).size()), names, values,
                            planning.history.discard_rate(), shape);
  return {tool.name, cost.branches(), cost.branches_ms, cost.serial_ms};
}

// Whether a call of `tool` decides optional arguments after its branches.
bool decides_later(const ToolSpec& tool, const CallOptions& options) {
  return options.given_arguments.empty() &&
         std::any_of(tool.arguments.begin(), tool.arguments.end(), [](const Property& p) { return !p.required; });
}

// Whether a call of `tool` in branches is announced provisionally before its end: a read-only
// tool, where the final call waits for a check or for optional arguments.
bool gets_provisional(const ToolSpec& tool, const CallOptions& options) {
  return tool.read_only && options.weaver.provisional && (decides_later(tool, options) || options.weaver.verify);
}

// The shape of a call of `tool` in branches, as the plan prices it.
PlanShape plan_shape(const ToolSpec& tool, const CallOptions& options) {
  return {options.weaver.padding, adopts_first(options), gets_provisional(tool, options)};
}

// The driver: per call, the name, then (with arguments to decode) the values phase, the
// write-back and the verifier, then the rest of the call by the serial loop; the events of
// the calls as they become executable.
class Weaver {
 public:
  Weaver(Context& context, const LoadedModel& model, const CompiledToolSet& tools, const CallOptions& options,
         Planning planning, CallTracker& tracker, Drafter* drafter, Chooser& chooser, CallStats& stats)
      : turn_(context, model, tools, options, planning, tracker, drafter, chooser, stats), values_(turn_) {}

  WeaveResult run() {
    for (int index = 0;; ++index) {
      const ToolSpec* tool = choose_tool(index == 0);
      if (!tool || !weave_call(*tool, index)) break;
      if (!ends_with(turn_.text, turn_.tools.format().separator)) break;
    }
    turn_.context.truncate(turn_.context.decided());  // a guess the turn did not take
    WeaveResult& result = turn_.result;
    result.generation.text = turn_.text;
    std::stable_sort(result.generation.decisions.begin(), result.generation.decisions.end(),
                     [](const Decision& a, const Decision& b) { return a.offset < b.offset; });
    return std::move(result);
  }

 private:
  // The head phase decides the tool's name among the tools (one, if the caller chose it: its
  // name is then forced, and only how the model writes the format's opener is its choice, as
  // under jump-forward).
  const ToolSpec* choose_tool(bool first) {
    const CallFormat& format = turn_.tools.format();
    std::string opener = first ? format.opener : "";
    std::string before = turn_.pending();
    turn_.add_text(opener);
    turn_.call_start = turn_.text.size();
    if (!format.named) return &turn_.tools.tools().front();  // an answer in a schema: its one object
    if (!turn_.serial("name", turn_.tools.head(before + opener), before + opener)) return nullptr;
    const std::string& text = turn_.text;
    const size_t name_at = turn_.call_start + format.name_prefix.size();
    if (text.compare(turn_.call_start, format.name_prefix.size(), format.name_prefix) != 0 ||
        text.size() < name_at + format.name_suffix.size())
      throw Error("internal: the name grammar wrote no call head");
    const ToolSpec* tool = turn_.tools.find(text.substr(name_at, text.size() - name_at - format.name_suffix.size()));
    if (!tool) throw Error("internal: the name grammar allowed an unknown tool");
    return tool;
  }

  bool decides_later(const ToolSpec& tool) const { return sw::decides_later(tool, turn_.options); }

  bool gets_provisional(const ToolSpec& tool) const { return sw::gets_provisional(tool, turn_.options); }

  void emit(CallEvent::Kind kind, int index, ToolCall call, double at_ms, bool replaces = false) {
    if (kind == CallEvent::Kind::Final) turn_.result.calls.push_back(call);
    CallEvent event{kind, index, std::move(call), at_ms, replaces};
    if (turn_.options.on_call) turn_.options.on_call(event);
    turn_.stats.events.push_back(std::move(event));
  }

  double now_ms() const { return ms_between(turn_.tracker.origin(), Clock::now()); }

  // What a call's branches announced before its end.
  struct Emitted {
    std::optional<ToolCall> provisional;
    bool final_call = false;
  };

  // One call of `tool`, the `index`-th of the turn: its values in branches, written back and
  // verified, then its rest (optional arguments, or a repair) serially - or, where the plan says
  // branches would cost more, all of it serially as jump-forward writes it; its events.
  bool weave_call(const ToolSpec& tool, int index) {
    std::vector<const Property*> args = branch_arguments(tool, turn_.options);
    const ArgumentSyntax& syntax = turn_.tools.format().arguments;
    turn_.add_text(turn_.tools.format().args_prefix + (args.empty() ? "" : syntax.open));
    const NextCall next = turn_.options.max_calls > 0 && index + 1 >= turn_.options.max_calls ? NextCall::Forbidden
                                                                                               : NextCall::Allowed;
    Emitted emitted;
    const std::string pending = turn_.pending();
    const bool woven = !args.empty() && branches_pay(tool, args, pending);
    if (!(woven ? weave_values(tool, index, args, next, emitted)
                : serial_call(tool, next, args.empty() ? "optional" : "serial", pending)))
      return false;
    if (emitted.final_call) return true;
    std::optional<ToolCall> closed = call_at(tool);
    if (!closed) return false;
    record_values(tool, *closed);
    const std::vector<double>& closed_ms = turn_.tracker.closed_ms();
    double at = index < int(closed_ms.size()) ? closed_ms[size_t(index)] : now_ms();
    const std::optional<ToolCall>& provisional = emitted.provisional;
    bool replaces = provisional && !(*provisional == *closed);
    emit(CallEvent::Kind::Final, index, *closed, replaces || !provisional ? at : turn_.stats.events.back().at_ms,
         replaces);
    return true;
  }

  // Whether the call's arguments go into branches: by the plan's predicted costs (recorded in
  // the call's stats), unless the caller asked for branches always, the values one branch after
  // another, or no pass cost is known yet.
  bool branches_pay(const ToolSpec& tool, const std::vector<const Property*>& args, const std::string& pending) {
    PlanStats plan{tool.name};
    if (plans_by_cost(turn_.options, turn_.curve)) {
      plan = price_call(turn_.model, turn_.tools, Planning{turn_.curve, turn_.history}, tool, args, pending,
                        plan_shape(tool, turn_.options));
    }
    turn_.stats.plans.push_back(plan);
    return plan.branches;
  }

  // The rest of the call after the `pending` text (the turn's text that the cache does not
  // hold yet), by the serial reference (the phase `name`d).
  bool serial_call(const ToolSpec& tool, NextCall next, const std::string& name, const std::string& pending) {
    Matcher reference = reference_matcher(turn_, tool, next, turn_.text.size() - pending.size());
    return turn_.serial(name, make_jump_forward(turn_.model, std::move(reference), turn_.chooser), pending);
  }

  // The call's values in branches, written back and verified, then the rest of the call.
  bool weave_values(const ToolSpec& tool, int index, const std::vector<const Property*>& args, NextCall next,
                    Emitted& emitted) {
    const WeaverOptions& options = turn_.options.weaver;
    const bool later = decides_later(tool);
    std::vector<Branch> branches = values_.prefill_skeleton(args);
    if (!values_.decode(branches)) return close_cut_values(tool, branches);
    const size_t untracked = turn_.text.size();  // the tracker sees the call once it stands
    std::optional<ToolCall> call = assembled_call(tool, branches);
    if (!call) return false;
    if (!later && !options.verify) {
      emit(CallEvent::Kind::Final, index, *call, now_ms());
      emitted.final_call = true;
      record_values(tool, *call);
    } else if (gets_provisional(tool)) {
      emit(CallEvent::Kind::Provisional, index, *call, now_ms());
      emitted.provisional = call;
    }
    // A guess costs its tokens in the pass, which a turn of one call wastes: guess once the
    // turn has shown several calls, and stop after a guess that was not taken.
    bool guess = options.whole_turn && next == NextCall::Allowed && index >= 1 && !turn_.guess_failed;
    WriteBack written = write_back(turn_, branches, guess ? &tool : nullptr, options.verify);
    std::optional<Verdict> verdict;
    if (written.checked) {
      const VerificationStats before = turn_.stats.verification;
      verdict = verify(turn_, branches, written, tool, next);
      turn_.history.record_verification(turn_.stats.verification.checked_tokens - before.checked_tokens,
                                        turn_.stats.verification.discarded_tokens - before.discarded_tokens);
      // The verified text is decided: its arguments are told before the call's final event.
      turn_.tracker.feed(turn_.text.substr(untracked));
      if (!verdict->repaired && !later) {
        // A provisional call that stands was executable when it was emitted.
        emit(CallEvent::Kind::Final, index, *call, emitted.provisional ? turn_.stats.events.back().at_ms : now_ms());
        emitted.final_call = true;
        record_values(tool, *call);
      }
    } else {
      if (options.verify) turn_.stats.verification.unverified_calls += 1;
      turn_.tracker.feed(turn_.text.substr(untracked));
    }
    if (!verdict) {
      std::string rest = turn_.pending();
      return turn_.serial("optional", turn_.tools.tail(tool, rest, turn_.optional_arguments(), Members::Written, next),
                          rest);
    }
    // The serial reference writes the rest of the call from where its choices stand.
    std::unique_ptr<Drafter> drafter;
    if (verdict->repaired) drafter = std::make_unique<ReferenceLookup>(turn_.curve, verdict->rest);
    return turn_.serial(verdict->repaired ? "repair" : "optional",
                        make_jump_forward(turn_.model, verdict->reference, turn_.chooser),
                        "", drafter.get());
  }

  void record_values(const ToolSpec&, const ToolCall& call) { remember_values(turn_.model, turn_.history, call); }

  // The branches' values joined into the call's members, added to the turn's text, and the call
  // they make; nullopt (and the failure) where a value's text is not
  // a value: the grammars keep its shape, not its content - a number beyond a double's range or
  // a string of bytes that are not UTF-8 fails here, and the answer is not a call.
  std::optional<ToolCall> assembled_call(const ToolSpec& tool, const std::vector<Branch>& branches) {
    const ArgumentSyntax& syntax = turn_.tools.format().arguments;
    std::string members;
    Json values = Json::object();
    for (const Branch& b : branches) {
      members += &b == &branches.front() ? "" : syntax.separator;
      // The branch's text starts with the end of its key (the value prefix).
      const size_t text_at = turn_.text.size() + members.size() + b.skeleton->key_text.size() -
                             b.skeleton->value_prefix.size();
      for (const Decision& d : b.decisions) turn_.result.generation.decisions.push_back({text_at + d.offset, d.margin});
      members += b.skeleton->key_text + b.value();
      std::optional<Json> value = syntax.read_value(b.value(), &b.skeleton->argument->schema);
      if (!value) {
        turn_.result.failure = kNotAValue;
        return std::nullopt;
      }
      values[b.skeleton->argument->name] = std::move(*value);
    }
    turn_.text += members;
    return ToolCall{tool.name, std::move(values)};
  }

  // An answer in a schema cut off at max_tokens inside its branches: each unfinished value ended
  // by the fewest bytes its grammar allows and the members written, so that the answer is then
  // closed as a serial one is (Answer). A call is never closed: a cut value is not to be
  // executed. Returns false: the turn stopped.
  bool close_cut_values(const ToolSpec& tool, std::vector<Branch>& branches) {
    if (!turn_.result.cut_in_branches || turn_.tools.format().named) return false;
    for (Branch& b : branches) {
      if (!b.done) b.text += b.matcher.shortest_completion();
    }
    const size_t untracked = turn_.text.size();
    if (!assembled_call(tool, branches)) return false;
    turn_.tracker.feed(turn_.text.substr(untracked));
    turn_.result.cut_in_branches = false;  // the text holds every value now
    return false;
  }

  // The call of `tool` the turn holds from its start on.
  std::optional<ToolCall> call_at(const ToolSpec& tool) {
    const CallFormat& format = turn_.tools.format();
    const size_t begin = turn_.call_start + format.call_head(tool.name).size();
    try {
      return ToolCall{tool.name, format.arguments_at(turn_.text, begin, &tool).first};
    } catch (const Error&) {
      turn_.result.failure = kNotAValue;
      return std::nullopt;
    }
  }

  WeaveTurn turn_;
  ValuesPhase values_;
};

}  // namespace

void remember_values(const LoadedModel& model, CallHistory& history, const ToolCall& call) {
  for (const auto& [name, value] : call.arguments.items())
    history.record_value(call.name, name, json_kind(value), int(model.tokenize(value.dump(), false).size()));
}

std::optional<std::map<std::string, PlanStats>> serial_plans(const LoadedModel& model, const CompiledToolSet& tools,
                                                            const CallOptions& options, Planning planning) {
  if (!plans_by_cost(options, planning.curve) || !options.given_arguments.empty() || options.weaver.whole_turn)
    return std::nullopt;
  const CallFormat& format = tools.format();
  std::map<std::string, PlanStats> plans;
  for (const ToolSpec& tool : tools.tools()) {
    const std::vector<const Property*> args = branch_arguments(tool, options);
    PlanStats plan{tool.name, false};
    if (!args.empty()) {
      const std::string head = format.opener + format.call_head(tool.name) + format.arguments.open;
      plan = price_call(model, tools, planning, tool, args, head, plan_shape(tool, options));
    }
    if (plan.branches) return std::nullopt;
    plans.emplace(tool.name, plan);
  }
  return plans;
}

WeaveResult weave(Context& context, const LoadedModel& model, const CompiledToolSet& tools,
                  const CallOptions& options, Planning planning, CallTracker& tracker, Drafter* drafter,
                  Chooser& chooser, CallStats& stats) {
  return Weaver(context, model, tools, options, planning, tracker, drafter, chooser, stats).run();
}

}  // namespace sw
