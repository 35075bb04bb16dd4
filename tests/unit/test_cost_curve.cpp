// The padding rule of the measured pass-cost curve, and the places a pass has free for drafts.
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

}  // namespace
