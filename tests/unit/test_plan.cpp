// SchemaWeaver's plan: branches where the machine's pass costs make them pay, the serial
// values elsewhere; and what a session's calls teach it about their values.
#include <gtest/gtest.h>

#include "testing.h"

namespace {

// The names of `arguments` arguments, each of 4 tokens.
std::vector<int> names_of(int arguments) { return std::vector<int>(size_t(arguments), 4); }

// String values of these many tokens (their quotes included, a pass for each word).
std::vector<sw::ValueEstimate> strings(const std::vector<double>& tokens) {
  std::vector<sw::ValueEstimate> values;
  for (double t : tokens) values.push_back({t, std::max(0.0, t - 2)});
  return values;
}

// Memory-bound: a pass of 8 tokens costs 1.3x one (the weights streamed once dominate).
const sw::CostCurve kMemoryBound{{20, 20.8, 21.6, 22.4, 23.2, 24, 24.8, 25.6}, 0.4};
// Compute-bound, as measured on a 2-core AVX2 EPYC: 2 tokens 1.64x one, 4 tokens 2.87x, 8 tokens 5.7x.
const sw::CostCurve kComputeBound{{65, 106.6, 146, 186.5, 224, 263, 300, 370.5}, 45};

TEST(Plan, OneArgumentIsNeverFasterInABranch) {
  for (const sw::CostCurve& curve : {kMemoryBound, kComputeBound}) {
    for (double tokens : {1.0, 3.0, 12.0}) {
      sw::PlanCost cost = sw::plan_cost(curve, 6, names_of(1), strings({tokens}), 0.0, {});
      EXPECT_FALSE(cost.branches()) << cost.branches_ms << " vs " << cost.serial_ms;
      EXPECT_GE(cost.branches_ms, cost.serial_ms);
    }
  }
}

// A read-only tool's provisional call comes before the write-back in branches; serially, after
// the decision about its optional arguments: one argument gets there sooner in a branch.
TEST(Plan, AProvisionalCallComesSoonerFromABranch) {
  sw::PlanCost cost = sw::plan_cost(kMemoryBound, 6, names_of(1), strings({8}), 0.0, {true, true, true});
  EXPECT_TRUE(cost.branches()) << cost.branches_ms << " vs " << cost.serial_ms;
}

TEST(Plan, BranchesPayWhereWidePassesAreCheap) {
  sw::PlanCost cost = sw::plan_cost(kMemoryBound, 6, names_of(4), strings({6, 5, 8, 3}), 0.0, {});
  EXPECT_TRUE(cost.branches()) << cost.branches_ms << " vs " << cost.serial_ms;
  EXPECT_LT(cost.branches_ms, 0.6 * cost.serial_ms);
}

TEST(Plan, SerialWhereEveryTokenCostsItsShare) {
  // The case that measured slowest in branches on that machine: five required arguments.
  sw::PlanCost cost = sw::plan_cost(kComputeBound, 6, names_of(5), strings({6, 5, 8, 3, 2}), 0.0, {});
  EXPECT_FALSE(cost.branches()) << cost.branches_ms << " vs " << cost.serial_ms;
}

TEST(Plan, RepairsTheVerifierMakesCountAgainstTheBranches) {
  const std::vector<int> s = names_of(3);
  sw::PlanCost clean = sw::plan_cost(kMemoryBound, 6, s, strings({6, 6, 6}), 0.0, {});
  sw::PlanCost repaired = sw::plan_cost(kMemoryBound, 6, s, strings({6, 6, 6}), 0.5, {});
  EXPECT_EQ(clean.serial_ms, repaired.serial_ms);
  EXPECT_GT(repaired.branches_ms, clean.branches_ms + 5 * 20);  // half of 15 picks decided again, a pass each
}

TEST(Plan, ComputingTheFirstValueAgainCostsTheBranches) {
  const std::vector<int> s = names_of(3);
  sw::PlanCost adopted = sw::plan_cost(kComputeBound, 6, s, strings({6, 6, 6}), 0.0, {});
  sw::PlanCost recomputed = sw::plan_cost(kComputeBound, 6, s, strings({6, 6, 6}), 0.0, {true, false, false});
  EXPECT_GT(recomputed.branches_ms, adopted.branches_ms);
}

// Gemma 3 270M on this machine's kind: a pass of 4 tokens keeping one row of logits costs 1.4x
// one, but its output layer (262k tokens, most of its weights) makes each further kept row
// cost most of a one-token pass. Priced by width alone its branches look cheap; priced with
// their rows, serial wins.
TEST(Plan, EachBranchPaysForItsRowOfLogits) {
  sw::CostCurve rows_free{{15.3, 20.5, 21.5, 21.5, 24, 25, 26, 27}, 0.6};
  sw::CostCurve rows_costly = rows_free;
  rows_costly.rows_ms = sw::rows_curve(9);
  const std::vector<int> s = names_of(3);
  EXPECT_TRUE(sw::plan_cost(rows_free, 6, s, strings({6, 5, 8}), 0.0, {}).branches());
  sw::PlanCost priced = sw::plan_cost(rows_costly, 6, s, strings({6, 5, 8}), 0.0, {});
  EXPECT_FALSE(priced.branches()) << priced.branches_ms << " vs " << priced.serial_ms;
}

// A curve learnt while another process held the cores (3416 ms for one token, each further
// token its share) plans the values serially; nine passes of each width at what they cost now
// put the branches back where they pay.
TEST(Plan, APlanMadeUnderLoadFollowsWhatPassesCostNow) {
  sw::PassCosts costs;
  for (int w = 1; w <= sw::PassCosts::kWidths; ++w) costs.record(w, 3416.0 * w);
  auto plan = [&] { return sw::plan_cost(costs.estimate(), 6, names_of(4), strings({6, 5, 8, 3}), 0.0, {}); };
  EXPECT_FALSE(plan().branches());
  for (int round = 0; round < int(sw::PassCosts::kWindow); ++round) {
    for (int w = 1; w <= sw::PassCosts::kWidths; ++w) costs.record(w, kMemoryBound.cost(w));
  }
  EXPECT_TRUE(plan().branches());
}

TEST(CallHistory, AveragesTheLastValuesOfEachArgument) {
  sw::CallHistory history;
  EXPECT_EQ(history.value_tokens("get_weather", "city"), 0);
  history.record_value("get_weather", "city", "string", 2);
  history.record_value("get_weather", "city", "string", 4);
  history.record_value("get_weather", "unit", "string", 1);
  EXPECT_DOUBLE_EQ(history.value_tokens("get_weather", "city"), 3);
  for (size_t i = 0; i < sw::CallHistory::kWindow; ++i) history.record_value("get_weather", "city", "string", 10);
  EXPECT_DOUBLE_EQ(history.value_tokens("get_weather", "city"), 10);  // older values left the window
  EXPECT_DOUBLE_EQ(history.value_tokens("get_weather", "unit"), 1);
  // Every tool's strings so far: 2, 4, 1 and five of 10.
  EXPECT_DOUBLE_EQ(history.kind_tokens("string"), 57.0 / 8);
  EXPECT_EQ(history.kind_tokens("number"), 0);
  EXPECT_DOUBLE_EQ(history.discard_rate(), sw::CallHistory::kPriorRate);  // before any check
  history.record_verification(60, 30);
  history.record_verification(60, 30);
  // Half of 120 checked picks decided again, with the prior's 30 picks at 10 %.
  EXPECT_DOUBLE_EQ(history.discard_rate(), (60 + 3) / 150.0);
}

TEST(CostCurve, ExtendsBeyondItsWidestPass) {
  sw::CostCurve curve{{10, 13, 16, 15, 21, 23, 25, 27}};
  EXPECT_DOUBLE_EQ(curve.pass_ms(8), 27);
  EXPECT_DOUBLE_EQ(curve.pass_ms(10), 31);  // the last step (2 ms) goes on
  curve.wide_ms_per_token = 5;
  EXPECT_DOUBLE_EQ(curve.pass_ms(10), 50);  // unless wide passes were seen to cost more per token
  const sw::CostCurve falling{{10, 8}};
  EXPECT_DOUBLE_EQ(falling.pass_ms(4), 8);  // a falling step is not extrapolated
  curve.rows_ms = sw::rows_curve(3);
  EXPECT_DOUBLE_EQ(curve.pass_ms(4, 4), 15 + 3 * 3);  // each kept row beyond the first adds its cost
  EXPECT_DOUBLE_EQ(curve.pass_ms(10, 2), 53);
  curve.rows_ms = {0, 1, 2, 3, 12};                        // the kernels' step at five rows
  EXPECT_DOUBLE_EQ(curve.pass_ms(5, 5), 21 + 12);
  EXPECT_DOUBLE_EQ(curve.pass_ms(5, 9), 21 + 12 * 8 / 4.0);  // beyond: as a row at five
}

}  // namespace
