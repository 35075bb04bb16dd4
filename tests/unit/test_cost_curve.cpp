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

TEST(PassCosts, KeptRowsCostWhatTheyAddToAPassOfTheirWidth) {
  // One row kept: 10 ms for a token, 20 for four; four rows kept: 50 - 31.5 ms for three more.
  sw::PassCosts costs = learnt({{1, 10}, {4, 20}});
  EXPECT_TRUE(costs.estimate().rows_ms.empty());  // no pass keeping more than one seen yet
  EXPECT_DOUBLE_EQ(costs.estimate().kept_rows_ms(4), 0);
  costs.record(4, 50, 4);
  costs.record(4, 51.5, 4);
  costs.record(4, 900, 4);  // slowed by another process: moves no median
  sw::CostCurve curve = costs.estimate();
  EXPECT_DOUBLE_EQ(curve.kept_rows_ms(4), 31.5);
  EXPECT_DOUBLE_EQ(curve.kept_rows_ms(2), 10.5);  // between one row (nothing) and four
  EXPECT_DOUBLE_EQ(curve.kept_rows_ms(8), 31.5 * 7 / 3);  // beyond: as many times a row's share
  EXPECT_DOUBLE_EQ(curve.cost(4), 20);  // the passes keeping rows leave the one-row curve alone
  EXPECT_DOUBLE_EQ(curve.pass_ms(4, 4), 20 + 31.5);
  // A pass that kept rows and cost no more than its width's one-row pass: rows are free.
  sw::PassCosts free_rows = learnt({{1, 10}, {4, 20}});
  free_rows.record(4, 19, 4);
  EXPECT_DOUBLE_EQ(free_rows.estimate().kept_rows_ms(4), 0);
  // More rows than tokens is not a pass: ignored.
  free_rows.record(2, 100, 2 + 1);
  EXPECT_DOUBLE_EQ(free_rows.estimate().kept_rows_ms(3), 0);
}

// Gemma 3 270M's output layer on a 2-core AVX-512 Xeon: four kept rows add 7.3 ms, five 19.9 ms
// (its kernels take rows in groups of four). One cost per row priced five rows at half that;
// each number of rows is learnt for itself.
TEST(PassCosts, EachNumberOfKeptRowsIsLearntForItself) {
  sw::PassCosts costs = learnt({{1, 21.3}, {2, 23.2}, {3, 24.2}, {4, 25.2}, {5, 28.1}, {6, 29.6}, {7, 31.1}, {8, 32.6}});
  costs.record(4, 25.2 + 7.3, 4);
  costs.record(5, 28.1 + 19.9, 5);
  costs.record(8, 32.6 + 0.5, 2);  // two rows of an eight-token pass (a write-back)
  costs.record(8, 32.6 + 33, 12 - 4);
  const sw::CostCurve curve = costs.estimate();
  EXPECT_NEAR(curve.kept_rows_ms(2), 0.5, 1e-9);
  EXPECT_NEAR(curve.kept_rows_ms(3), 0.5 + (7.3 - 0.5) / 2, 1e-9);  // between two and four
  EXPECT_NEAR(curve.kept_rows_ms(4), 7.3, 1e-9);
  EXPECT_NEAR(curve.kept_rows_ms(5), 19.9, 1e-9);
  EXPECT_NEAR(curve.kept_rows_ms(8), 33, 1e-9);
  EXPECT_NEAR(curve.kept_rows_ms(15), 33 * 14 / 7.0, 1e-9);  // beyond the curve, as its widest
  // A pass keeping more rows than the curve counts at its widest, scaled by its rows.
  sw::PassCosts wide = costs;
  const double sixteen = curve.pass_ms(16);  // one row kept
  for (size_t i = 0; i < sw::PassCosts::kWindow; ++i) wide.record(16, sixteen + 14 * 3, 15);
  EXPECT_NEAR(wide.estimate().kept_rows_ms(8), 7 * 3, 1e-9);
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
  EXPECT_EQ(read.estimate().rows_ms, costs.estimate().rows_ms);
  EXPECT_DOUBLE_EQ(read.estimate().kept_rows_ms(2), 6);
  EXPECT_EQ(read.recorded(), 0u);  // what was read is not this run's
  sw::PassCosts damaged = learnt({{1, 20}});
  damaged.restore(sw::Json{{"ms_by_width", "not a list"}});
  EXPECT_DOUBLE_EQ(damaged.estimate().cost(1), 20);
}

}  // namespace
