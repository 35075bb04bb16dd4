#include "engine/weave/plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/model/model.h"
#include "util/window.h"

namespace sw {
namespace {

std::string history_key(const std::string& tool, const std::string& argument) { return tool + '\n' + argument; }

double average(const std::deque<int>& window) {
  return window.empty() ? 0 : std::accumulate(window.begin(), window.end(), 0.0) / double(window.size());
}

// The kind of the values `schema` admits, as json_kind names them ("" for an enum or a choice of
// types: no one kind speaks for them).
std::string schema_kind(const Schema& schema) {
  if (!schema.enum_values.empty() || !schema.any_of.empty()) return "";
  switch (schema.type) {
    case Type::String: return "string";
    case Type::Integer:
    case Type::Number: return "number";
    case Type::Array: return "array";
    case Type::Object: return "object";
    case Type::Boolean:
    case Type::Null:
    case Type::Any: return "";
  }
  return "";
}

// Tokens of a typical value of `schema` when nothing has been seen of it: its enum members as
// the model tokenizes them (a few), else by type.
double prior_value_tokens(const LoadedModel& model, const Schema& schema) {
  if (!schema.enum_values.empty()) {
    const size_t shown = std::min<size_t>(schema.enum_values.size(), 16);
    double total = 0;
    for (size_t i = 0; i < shown; ++i) total += double(model.tokenize(schema.enum_values[i].dump(), false).size());
    return total / double(shown);
  }
  if (!schema.any_of.empty()) return prior_value_tokens(model, schema.any_of.front());
  switch (schema.type) {
    case Type::Boolean:
    case Type::Null: return 1;
    case Type::Integer: return 2;
    case Type::Number: return 3;
    case Type::Array: return 10;
    case Type::Object: return 12;
    case Type::String:
    case Type::Any: return 6;
  }
  return 6;
}

// The passes inside a value of `schema` that takes `tokens` (ValueEstimate::passes).
double passes_inside(const Schema& schema, double tokens) {
  if (!schema.enum_values.empty()) return 0;
  if (!schema.any_of.empty()) return passes_inside(schema.any_of.front(), tokens);
  switch (schema.type) {
    case Type::Boolean:
    case Type::Null: return 0;
    case Type::Integer:
    case Type::Number: return tokens;
    case Type::String:
    case Type::Array:
    case Type::Object:
    case Type::Any: return std::max(0.0, tokens - 2);
  }
  return std::max(0.0, tokens - 2);
}

}  // namespace

double CallHistory::value_tokens(const std::string& tool, const std::string& argument) const {
  auto seen = values_.find(history_key(tool, argument));
  return seen == values_.end() ? 0 : average(seen->second);
}

double CallHistory::kind_tokens(const std::string& kind) const {
  auto seen = kinds_.find(kind);
  return seen == kinds_.end() ? 0 : average(seen->second);
}

void CallHistory::record_value(const std::string& tool, const std::string& argument, const std::string& kind,
                               int tokens) {
  remember(values_[history_key(tool, argument)], tokens, kWindow);
  remember(kinds_[kind], tokens, kKindWindow);
}

std::string json_kind(const Json& value) {
  if (value.is_string()) return "string";
  if (value.is_number()) return "number";
  if (value.is_array()) return "array";
  if (value.is_object()) return "object";
  return "literal";
}

void CallHistory::record_verification(int checked, int discarded) {
  checked_ += checked;
  discarded_ += discarded;
}

ValueEstimate expected_value(const LoadedModel& model, const CallHistory& history, const std::string& tool,
                             const Property& argument) {
  const std::string kind = schema_kind(argument.schema);
  double tokens = history.value_tokens(tool, argument.name);
  if (tokens == 0 && !kind.empty()) tokens = history.kind_tokens(kind);
  if (tokens == 0) tokens = prior_value_tokens(model, argument.schema);
  return {tokens, passes_inside(argument.schema, tokens)};
}

PlanCost plan_cost(const CostCurve& curve, int head, const std::vector<int>& names,
                   const std::vector<ValueEstimate>& values, double discard_rate, PlanShape shape) {
  // A pass of `tokens` keeping the logits of `rows` of them (the serial decoder keeps one).
  auto pass = [&](int tokens, int rows = 1) { return curve.pass_ms(std::max(tokens, 1), rows); };
  // A values pass: a token and its logits per branch, placeholders where they cost less.
  auto padded = [&](int branches) {
    const int size = shape.padding ? curve.padded_size(branches) : branches;
    return std::min(pass(branches, branches), pass(size, branches));
  };
  // Each value's passes, in branches one step per pass for every branch still deciding.
  std::vector<int> steps;
  for (const ValueEstimate& v : values) steps.push_back(int(std::lround(v.passes)));
  PlanCost cost;
  int all_names = 0;
  int written_back = 1;  // the seam after the last value
  for (size_t i = 0; i < names.size(); ++i) {
    const int name = names[i];
    all_names += name;
    // Serially, each argument's name rides in one pass with the previous value's last pick.
    cost.serial_ms += (i == 0 ? pass(head + name) : pass(1 + name)) + steps[i] * pass(1);
    if (i > 0 || !shape.adopt_first) written_back += int(std::lround(values[i].tokens));
    if (i > 0) written_back += name;
  }
  // The skeleton keeps the logits after the head and after each name.
  const int branches = int(names.size());
  cost.branches_ms = pass(head + all_names, 1 + branches);
  // The verifier checks every pick but those of an adopted first branch, whose last alone can
  // differ: the write-back keeps their logits.
  int checked = 0;
  for (size_t i = 0; i < steps.size(); ++i) checked += i == 0 && shape.adopt_first ? 1 : steps[i] + 1;
  if (shape.provisional) {
    cost.serial_ms += pass(1);  // whether an optional argument follows: a pass after the values
    cost.margin = 0;
  } else {
    cost.branches_ms += pass(written_back, std::min(checked + 1, written_back));
  }
  const int longest = *std::max_element(steps.begin(), steps.end());
  for (int step = 1; step <= longest; ++step) {
    int alive = int(std::count_if(steps.begin(), steps.end(), [&](int s) { return s >= step; }));
    cost.branches_ms += padded(alive);
  }
  // A pick the verifier decides again costs a serial pass on top of the branches' work.
  cost.branches_ms += discard_rate * checked * pass(1);
  return cost;
}

}  // namespace sw
