// How SchemaWeaver decodes a call's values: in parallel branches, or one after another as
// jump-forward writes them - chosen per call by what each would cost on this machine now.
//
// Branches save serial steps: the values take as many passes as the longest, not as many as
// all together. They pay for it in tokens: the skeleton's pass carries every argument's name,
// each values pass carries one token per unfinished branch, and the write-back carries every
// value but the first again; a value the verifier finds the reference would choose otherwise
// is decided again serially. On a memory-bound machine wide passes cost little more than narrow
// ones and the branches win; on a compute-bound one every token costs nearly its share and the
// serial plan wins (a call of one argument is never faster in a branch). The calls are
// jump-forward's either way: only the passes differ.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "engine/measure/cost_curve.h"
#include "engine/model/model.h"

namespace sw {

// What a session's earlier calls showed that prices the next one's plan.
class CallHistory {
 public:
  static constexpr size_t kWindow = 5;

  static constexpr size_t kKindWindow = 20;

  // The tokens the last values of `tool`'s `argument` took on average (0: none seen yet).
  double value_tokens(const std::string& tool, const std::string& argument) const;
  // The tokens the last kKindWindow values of a JSON kind ("string", "number", "array",
  // "object") took in any tool's call, on average (0: none seen yet): what this model writes
  // for an argument it has not filled before.
  double kind_tokens(const std::string& kind) const;
  // A value of `tool`'s `argument`, of `kind` (json_kind), that took `tokens`.
  void record_value(const std::string& tool, const std::string& argument, const std::string& kind, int tokens);
  // A verified call: the branches' picks checked, and of them those decided again.
  void record_verification(int checked, int discarded);
  // The share of checked picks that the verifier has been deciding again, starting from a prior
  // worth kPriorPicks picks: on the BFCL sample the trained Qwen2.5-Coder models had 11-12 % of
  // them decided again, the base Gemma 3 270M 21 %, SmolLM2-135M half.
  double discard_rate() const {
    return (double(discarded_) + kPriorRate * kPriorPicks) / (double(checked_) + kPriorPicks);
  }
  static constexpr double kPriorRate = 0.1;
  static constexpr double kPriorPicks = 30;

 private:
  std::map<std::string, std::deque<int>> values_;  // by tool and argument
  std::map<std::string, std::deque<int>> kinds_;   // by JSON kind, in any tool
  long checked_ = 0;
  long discarded_ = 0;
};

// A value as the plan prices it.
struct ValueEstimate {
  double tokens = 1;  // as the call holds them: what a write-back carries
  // The passes a serial decoder spends inside it, one per pick but the last (whose pass carries
  // the text after the value): a string's words (its quotes are forced or ride with the next
  // text), every digit token of a number (a number ends only at the token after it), none for
  // an enum member (its first pick forces the rest) or a boolean.
  double passes = 0;
};
// The kind of a JSON value as CallHistory counts it: "string", "number", "array", "object", or
// "literal" (true, false, null).
std::string json_kind(const Json& value);

// What a value of `argument` is expected to take: its tokens as `history` saw them, else as the
// session's values of its kind took them (not for an enum, whose members say it), else a prior
// from its schema (an enum's members as tokenized, a number's few digits, a string's words).
ValueEstimate expected_value(const LoadedModel& model, const CallHistory& history, const std::string& tool,
                             const Property& argument);

// The predicted time of each plan from the call's skeleton (the head's tokens still to be
// written, and each argument's name tokens) until the call can be executed: to the last value's last choice,
// what follows being the same in both - or, for a call that gets a provisional call (a read-only
// tool whose optional arguments are decided later), to its provisional call in branches, which
// comes before the write-back, and to the decision about its optional arguments serially.
struct PlanCost {
  double branches_ms = 0;
  double serial_ms = 0;
  // The branches only where they save more than the estimates' noise: a near tie goes serial,
  // whose cost depends on fewer estimates - except before a provisional call, where the serial
  // estimate is its least (one pass for the optional arguments, which may take more).
  double margin = kMargin;
  bool branches() const { return branches_ms < serial_ms * (1 - margin); }
  static constexpr double kMargin = 0.05;
};

// What prices a call's steps: what passes cost as learnt so far (null until a pass of one token
// was seen: no padding, no drafts sized, the values in branches) and the session's earlier calls.
struct Planning {
  const CostCurve* curve;
  CallHistory& history;
};

// `names` and `values` (of the same size, one at least): the tokens of each argument's name and
// what its value is expected to take, in the skeleton's order. `padding`:
// the values passes are padded as the curve says; `adopt_first`: the write-back takes over the
// first branch's cells (WeaverOptions); `provisional`: the call gets a provisional call.
struct PlanShape {
  bool padding = true;
  bool adopt_first = true;
  bool provisional = false;
};
PlanCost plan_cost(const CostCurve& curve, int head, const std::vector<int>& names,
                   const std::vector<ValueEstimate>& values, double discard_rate, PlanShape shape);

}  // namespace sw
