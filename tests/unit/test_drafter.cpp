// Prompt-lookup drafting: where a draft comes from and how long it is worth making.
#include <gtest/gtest.h>

#include "testing.h"

namespace {

using Tokens = std::vector<llama_token>;

TEST(PromptLookup, ContinuesTheLongestEarlierMatchOfTheSuffix) {
  // [1 2] occurred at the start, followed by 9 3; [2] alone occurred later, followed by 8.
  EXPECT_EQ(sw::lookup_continuation({1, 2, 9, 3, 2, 8, 1, 2}, 2), (Tokens{9, 3}));
}

TEST(PromptLookup, TakesTheLatestOccurrenceAndStopsAtTheLimit) {
  EXPECT_EQ(sw::lookup_continuation({1, 7, 1, 8, 5, 1}, 8), (Tokens{8, 5, 1}));
  EXPECT_EQ(sw::lookup_continuation({1, 7, 1, 8, 5, 1}, 1), (Tokens{8}));
}

TEST(PromptLookup, NothingWithoutAnEarlierOccurrence) {
  EXPECT_TRUE(sw::lookup_continuation({1, 2, 3}, 4).empty());
  EXPECT_TRUE(sw::lookup_continuation({1}, 4).empty());
  EXPECT_TRUE(sw::lookup_continuation({}, 4).empty());
  EXPECT_TRUE(sw::lookup_continuation({1, 2, 1}, 0).empty());
}

// A reference text (SchemaWeaver's values, when the serial reference takes a call over) is
// followed from where the answer's last tokens stand in it, onwards; prompt lookup elsewhere.
TEST(ReferenceLookup, FollowsTheReferenceOnwards) {
  sw::ReferenceLookup lookup(nullptr, {5, 6, 7, 5, 8, 9});
  EXPECT_EQ(lookup.propose({1, 2, 5}, 1, 3), (Tokens{6, 7, 5}));  // the first [5], not the later one
  EXPECT_EQ(lookup.propose({1, 2, 5, 6, 7, 5}, 1, 3), (Tokens{8, 9}));  // from there on: [7 5] -> 8 9
  EXPECT_EQ(lookup.propose({3, 4, 3}, 1, 3), (Tokens{4, 3}));  // not in the reference: prompt lookup
}

TEST(PromptLookup, DraftsAsFarAsThePassCostAllows) {
  sw::PromptLookup memory_bound(nullptr);  // every pass costs the same: draft all there is
  EXPECT_EQ(memory_bound.best_length(1, 5, 0.5), 5);
  EXPECT_EQ(memory_bound.best_length(1, 20, 0.5), sw::PromptLookup::kMaxDraft);

  sw::CostCurve linear{{10, 20, 30, 40, 50, 60, 70, 80}};  // compute-bound: a token costs a pass
  EXPECT_EQ(sw::PromptLookup(&linear).best_length(1, 8, 0.9), 0);

  sw::CostCurve gentle{{10, 11, 12, 13, 14, 15, 16, 17}};
  sw::PromptLookup lookup(&gentle);
  EXPECT_EQ(lookup.best_length(1, 8, 0.05), 0);  // drafts that are never taken do not pay
  int likely = lookup.best_length(1, 8, 0.9);
  EXPECT_GE(likely, 4);
  EXPECT_LE(lookup.best_length(1, 8, 0.5), likely);
}

TEST(PromptLookup, LearnsFromWhatWasTaken) {
  sw::CostCurve gentle{{10, 11, 12, 13, 14, 15, 16, 17}};
  sw::PromptLookup lookup(&gentle);
  Tokens history{4, 5, 6, 7, 8, 9, 4, 5};
  EXPECT_FALSE(lookup.propose(history, 1, 8).empty());
  lookup.record(100, 0);  // nothing was ever taken
  EXPECT_TRUE(lookup.propose(history, 1, 8).empty());
  EXPECT_EQ(lookup.checked(), 100);
}

}  // namespace
