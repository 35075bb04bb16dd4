// The thinking block's close: written as the template writes it, whatever of it the model wrote.
#include <gtest/gtest.h>

#include "testing.h"

namespace {

const sw::llama_chat::ReasoningBlock kQwen3{"<think>\n", "\n</think>\n\n", "</think>"};

TEST(ThinkingClose, AfterTheModelsEndMarkerOnlyWhatFollowsIt) {
  EXPECT_EQ(sw::unwritten_close(kQwen3, "Paris is in France.\n</think>"), "\n\n");
  EXPECT_EQ(sw::unwritten_close(kQwen3, "Paris.</think>"), "\n\n");
}

TEST(ThinkingClose, AtTheBudgetTheWholeCloseSaveWhatTheReasoningEndsWith) {
  EXPECT_EQ(sw::unwritten_close(kQwen3, "Paris is in"), "\n</think>\n\n");
  EXPECT_EQ(sw::unwritten_close(kQwen3, "Paris is in France.\n"), "</think>\n\n");
  EXPECT_EQ(sw::unwritten_close(kQwen3, "Paris\n</thi"), "nk>\n\n");
  EXPECT_EQ(sw::unwritten_close(kQwen3, ""), "\n</think>\n\n");
}

}  // namespace
