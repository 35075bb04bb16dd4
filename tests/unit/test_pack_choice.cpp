// Choosing weight types under a budget (bytes or time): the hull of each matrix's choices, the
// greedy allocation over them, and the table of measured times it is fed when packing for speed.
#include <gtest/gtest.h>

#include "testing.h"

namespace {

using sw::TypeChoice;

TEST(TypeChoice, TheHullDropsWhatCostsMoreAndErrsNoLess) {
  // Q8_0 costs more than Q6_K here and errs no less (a slow kernel): never worth its time. Q5_0
  // lies above the line from Q4_0 to Q6_K: going straight to Q6_K buys more per millisecond.
  const std::vector<TypeChoice> hull = sw::lower_hull({{GGML_TYPE_Q8_0, 0, 3.0, 0.2},
                                                        {GGML_TYPE_Q4_0, 0, 1.0, 1.0},
                                                        {GGML_TYPE_Q6_K, 0, 2.0, 0.2},
                                                        {GGML_TYPE_Q5_0, 0, 1.6, 0.8}});
  ASSERT_EQ(hull.size(), 2u);
  EXPECT_EQ(hull[0].type, GGML_TYPE_Q4_0);
  EXPECT_EQ(hull[1].type, GGML_TYPE_Q6_K);
}

TEST(TypeChoice, AMatrixWhoseTypeCostsNoTimeTakesTheMostAccurate) {
  // Embeddings that are only looked up: every type costs no time, the least error wins.
  const std::vector<TypeChoice> hull =
      sw::lower_hull({{GGML_TYPE_Q4_0, 0, 0.0, 1.0}, {GGML_TYPE_Q8_0, 0, 0.0, 0.1}, {GGML_TYPE_Q6_K, 0, 0.0, 0.3}});
  ASSERT_EQ(hull.size(), 1u);
  EXPECT_EQ(hull[0].type, GGML_TYPE_Q8_0);
}

TEST(TypeChoice, TimeGoesWhereItRemovesTheMostErrorAndTheBudgetHolds) {
  // Two matrices alike in time; the first's error falls ten times more for the same step up.
  const std::vector<std::vector<TypeChoice>> hulls = {
      {{GGML_TYPE_Q4_0, 0, 1.0, 10.0}, {GGML_TYPE_Q8_0, 0, 2.0, 0.5}},
      {{GGML_TYPE_Q4_0, 0, 1.0, 1.0}, {GGML_TYPE_Q8_0, 0, 2.0, 0.05}}};
  EXPECT_DOUBLE_EQ(sw::least_cost(hulls), 2.0);
  EXPECT_EQ(sw::allocate(hulls, 2.0), (std::vector<size_t>{0, 0}));    // only the fastest fits
  EXPECT_EQ(sw::allocate(hulls, 3.5), (std::vector<size_t>{1, 0}));    // one step: the first
  EXPECT_EQ(sw::allocate(hulls, 4.0), (std::vector<size_t>{1, 1}));    // both
  EXPECT_EQ(sw::allocate(hulls, 100.0), (std::vector<size_t>{1, 1}));  // nothing finer to buy
}

TEST(TypeCosts, TimesEveryTypeThatFitsEachShapeAtEveryPassSize) {
  const sw::MatrixShape wide{512, 64, true}, narrow{96, 64, true};
  const sw::TypeCostTable table =
      sw::measure_type_costs({GGML_TYPE_Q4_0, GGML_TYPE_Q4_K}, {wide, narrow}, {1, 4}, 1, 1);
  EXPECT_EQ(table.tokens, (std::vector<int>{1, 4}));
  for (auto [type, shape] : {std::pair{GGML_TYPE_Q4_0, wide}, {GGML_TYPE_Q4_K, wide}, {GGML_TYPE_Q4_0, narrow}}) {
    for (size_t i = 0; i < 2; ++i) EXPECT_GT(table.cost(type, shape, i), 0.0) << sw::TypeCostTable::key(type, shape);
  }
  // Rows of 96 weights are not whole 256-weight blocks: Q4_K cannot store them, nothing is timed.
  EXPECT_THROW(table.cost(GGML_TYPE_Q4_K, narrow, 0), sw::Error);
  sw::TypeCostTable read;
  from_json(table.to_json(), read);
  EXPECT_EQ(read.ms, table.ms);
}

}  // namespace
