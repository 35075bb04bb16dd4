// The padding rule of the pass-cost curve, the places a pass has free for drafts, and the
// estimates a session learns from its own passes.
#include <gtest/gtest.h>


#include "testing.h"

namespace {

TEST(CostCurve, PadsOnlyToACheaperLargerPass) {
  // A kernel that works on rows in fours: 4 tokens cost less than 3.
  sw::CostCurve curve{{10, 16, 21, 18, 26, 30, 34, 36}};
  EXPECT_EQ(curve.padded_size(1), 1);
  EXPECT_EQ(curve.padded_size(2), 2);
  EXPECT_EQ(curve.padded_size(3), 4);
  EXPECT_EQ(curve.padded_size(4), 4);
  EXPECT_EQ(curve.padded_size(8), 8);
  EXPECT_EQ(curve.padded_size(12), 12);  // beyond the curve: as is
}

TEST(CostCurve, IgnoresDifferencesWithinTheNoiseMargin) {
  sw::CostCurve curve{{10, 16, 21, 20.8}};
  EXPECT_EQ(curve.padded_size(3), 3);
  EXPECT_EQ(curve.padded_size(3, 0.0), 4);
}

TEST(CostCurve, FreePlacesCostNothingMore) {
  sw::CostCurve curve{{10, 16, 21, 18, 18, 30, 34, 36}};
  EXPECT_EQ(curve.free_size(1), 1);  // a second token costs more
  EXPECT_EQ(curve.free_size(3), 5);  // padded to 4, and 5 costs what 4 does
  EXPECT_EQ(curve.free_size(6), 6);
  EXPECT_EQ(curve.free_size(12), 12);  // beyond the curve: as is
}

sw::PassCosts learnt(const std::vector<std::pair<int, double>>& passes) {
  sw::PassCosts costs;
  for (const auto& [tokens, ms] : passes) costs.record(tokens, ms);
  return costs;
}

TEST(PassCosts, NoEstimateBeforeAPassOfOneToken) {
  EXPECT_TRUE(learnt({}).estimate().ms.empty());
  EXPECT_TRUE(learnt({{300, 3000}, {4, 30}}).estimate().ms.empty());
  EXPECT_EQ(learnt({{1, 20}}).estimate().max_tokens(), sw::PassCosts::kWidths);
}

TEST(PassCosts, AWidthSeenIsItsMedian) {
  // One pass slowed by another process moves nothing.
  sw::CostCurve curve = learnt({{1, 20}, {1, 21}, {1, 900}, {1, 19}, {1, 22}}).estimate();
  EXPECT_DOUBLE_EQ(curve.cost(1), 21);
}

TEST(PassCosts, EstimatesFollowWhatPassesCostNow) {
  // Learnt under load (or kept from a run under load): nine passes at today's cost replace it.
  sw::PassCosts costs = learnt({{1, 3416}, {1, 3400}, {1, 3500}, {1, 3390}});
  for (int i = 0; i < 9; ++i) costs.record(1, 22);
  EXPECT_DOUBLE_EQ(costs.estimate().cost(1), 22);
}

TEST(PassCosts, WidthsNotSeenComeFromTheirNeighboursAndThePrior) {
  // Seen: 1 and 4 tokens; the prompt's prefill says 10 ms a token.
  sw::CostCurve curve = learnt({{1, 20}, {4, 44}, {200, 2000}}).estimate();
  EXPECT_DOUBLE_EQ(curve.cost(2), 28);  // between 1 and 4
  EXPECT_DOUBLE_EQ(curve.cost(3), 36);
  // Beyond 4: the prior max(20, 10 n) scaled to agree at 4 (44 / 40).
  EXPECT_DOUBLE_EQ(curve.cost(8), 44 * 80.0 / 40.0);
  // Memory-bound (the prefill cheap per token): a wider pass costs what one token does, so a
  // guess never pads; compute-bound: each token its share.
  EXPECT_DOUBLE_EQ(learnt({{1, 20}, {500, 1000}}).estimate().cost(3), 20);
  EXPECT_EQ(learnt({{1, 20}, {500, 1000}}).estimate().padded_size(3), 3);
  EXPECT_DOUBLE_EQ(learnt({{1, 65}, {300, 300 * 45.0}}).estimate().cost(8), 360);
}

TEST(PassCosts, AWidthThatIsCheaperIsPaddedTo) {
  // The kernels of the AVX-512 machine: 4 tokens cost less than 3.
  sw::CostCurve curve = learnt({{1, 10}, {2, 16}, {3, 21}, {4, 18}, {100, 300}}).estimate();
  EXPECT_EQ(curve.padded_size(3), 4);
}

TEST(PassCosts, AKeptRowCostsWhatItAddsToAPassOfItsWidth) {
  // One row kept: 10 ms for a token, 20 for four; four rows kept: 50 - 10 ms a further row.
  sw::PassCosts costs = learnt({{1, 10}, {4, 20}});
  EXPECT_DOUBLE_EQ(costs.estimate().row_ms, 0);  // no pass keeping more than one seen yet
  costs.record(4, 50, 4);
  costs.record(4, 51.5, 4);
  costs.record(4, 900, 4);  // slowed by another process: moves no median
  sw::CostCurve curve = costs.estimate();
  EXPECT_DOUBLE_EQ(curve.row_ms, 10.5);
  EXPECT_DOUBLE_EQ(curve.cost(4), 20);  // the passes keeping rows leave the one-row curve alone
  EXPECT_DOUBLE_EQ(curve.pass_ms(4, 4), 20 + 3 * 10.5);
  // A pass that kept rows and cost no more than its width's one-row pass: rows are free.
  EXPECT_DOUBLE_EQ(learnt({{1, 10}, {4, 20}}).estimate().row_ms, 0);
  sw::PassCosts free_rows = learnt({{1, 10}, {4, 20}});
  free_rows.record(4, 19, 4);
  EXPECT_DOUBLE_EQ(free_rows.estimate().row_ms, 0);
  // More rows than tokens is not a pass: ignored.
  free_rows.record(2, 100, 3);
  EXPECT_DOUBLE_EQ(free_rows.estimate().row_ms, 0);
}

TEST(PassCosts, PinnedCostsStay) {
  sw::PassCosts costs = learnt({{1, 20}});
  costs.pin(sw::CostCurve{{5, 6}});
  costs.record(1, 40);
  EXPECT_EQ(costs.estimate().ms, (std::vector<double>{5, 6}));
}

TEST(PassCosts, KeptBetweenRunsAndADamagedFileIgnored) {
  sw::PassCosts costs = learnt({{1, 20}, {2, 30}, {64, 640}});
  costs.record(2, 36, 2);
  sw::PassCosts read;
  read.restore(costs.to_json());
  EXPECT_EQ(read.estimate().ms, costs.estimate().ms);
  EXPECT_DOUBLE_EQ(read.estimate().row_ms, 6);
  EXPECT_EQ(read.recorded(), 0u);  // what was read is not this run's
  sw::PassCosts damaged = learnt({{1, 20}});
  damaged.restore(sw::Json{{"ms_by_width", "not a list"}});
  EXPECT_DOUBLE_EQ(damaged.estimate().cost(1), 20);
}

}  // namespace
