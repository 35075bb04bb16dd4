#include "engine/weave/plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/model/model.h"

namespace sw {
namespace {

std::string history_key(const std::string& tool, const std::string& argument) { return tool + '\n' + argument; }

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
  if (seen == values_.end() || seen->second.empty()) return 0;
  return std::accumulate(seen->second.begin(), seen->second.end(), 0.0) / double(seen->second.size());
}

void CallHistory::record_value(const std::string& tool, const std::string& argument, int tokens) {
  std::deque<int>& seen = values_[history_key(tool, argument)];
  seen.push_back(tokens);
  if (seen.size() > kWindow) seen.pop_front();
}

void CallHistory::record_verification(int checked, int discarded) {
  checked_ += checked;
  discarded_ += discarded;
}

ValueEstimate expected_value(const LoadedModel& model, const CallHistory& history, const std::string& tool,
                             const Property& argument) {
  const double seen = history.value_tokens(tool, argument.name);
  const double tokens = seen > 0 ? seen : prior_value_tokens(model, argument.schema);
  return {tokens, passes_inside(argument.schema, tokens)};
}

PlanCost plan_cost(const CostCurve& curve, int head, const std::vector<int>& names,
                   const std::vector<ValueEstimate>& values, double discard_rate, PlanShape shape) {
  auto pass = [&](int tokens) { return curve.pass_ms(std::max(tokens, 1)); };
  auto padded = [&](int tokens) {
    return shape.padding ? std::min(pass(tokens), pass(curve.padded_size(tokens))) : pass(tokens);
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
  cost.branches_ms = pass(head + all_names);
  if (shape.provisional) {
    cost.serial_ms += pass(1);  // whether an optional argument follows: a pass after the values
    cost.margin = 0;
  } else {
    cost.branches_ms += pass(written_back);
  }
  const int longest = *std::max_element(steps.begin(), steps.end());
  for (int step = 1; step <= longest; ++step) {
    int alive = int(std::count_if(steps.begin(), steps.end(), [&](int s) { return s >= step; }));
    cost.branches_ms += padded(alive);
  }
  // A pick the verifier decides again costs a serial pass on top of the branches' work. It
  // checks every pick but those of an adopted first branch, whose last alone can differ.
  double checked = 0;
  for (size_t i = 0; i < steps.size(); ++i) checked += i == 0 && shape.adopt_first ? 1 : steps[i] + 1;
  cost.branches_ms += discard_rate * checked * pass(1);
  return cost;
}

}  // namespace sw
