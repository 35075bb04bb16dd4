// Speculative decoding with prompt-lookup drafts on the default model: the same answer as
// constrained decoding, in fewer passes, with the cache holding exactly the answer.
#include <gtest/gtest.h>

#include "agreement.h"
#include "bfcl/bfcl.h"
#include "bfcl_case.h"
#include "schemaweaver/engine.h"
#include "testing.h"

namespace {

std::shared_ptr<sw::Model> model() {
  static std::shared_ptr<sw::Model> loaded = sw::Model::load({SW_TEST_MODEL});
  return loaded;
}

const char* const kCases[] = {"simple_python_97", "simple_python_142", "multiple_50", "parallel_8"};

struct Decoded {
  sw::GenerationResult result;
  std::vector<llama_token> cache;
};

// Constrained decoding of one case in a fresh context, with or without a drafter.
Decoded decode(const sw::bfcl::Case& c, sw::Drafter* drafter) {
  const sw::LoadedModel& m = loaded(*model());
  auto tools = sw::parse_tools(c.functions);
  sw::Context context(m, 2048);
  sw::PassCounter prompt;
  context.start_from(m.tokenize(sw::render_prompt(*model(), c.messages, tools), true), prompt);
  auto strategy = sw::make_strategy(sw::DecodeMode::Constrained, m, sw::build_call_grammar(m.format, tools));
  Decoded d{sw::generate(context, m, *strategy, 256, nullptr, drafter), context.history()};
  return d;
}

using ::answer_of;
Answer answer_of(const Decoded& d) { return {d.result.text, d.result.decisions}; }

// Where the answers agree whole (no near-tie), so do the caches, and each taken draft token
// saved one pass.
TEST(Speculative, DraftsChangeThePassesNotTheAnswer) {
  int serial_passes = 0, drafted_passes = 0, accepted = 0;
  for (const char* id : kCases) {
    sw::bfcl::Case c = bfcl_case(id);
    sw::PromptLookup drafter(nullptr);  // drafts as long as possible: the most to check
    Decoded serial = decode(c, nullptr);
    Decoded drafted = decode(c, &drafter);
    Comparison same = compare_where_decided(answer_of(serial), answer_of(drafted));
    EXPECT_TRUE(same.agree) << id << ": " << same.report;
    EXPECT_EQ(drafted.result.accepted_draft_tokens, drafter.accepted()) << id;
    if (!same.whole) continue;
    EXPECT_EQ(drafted.cache, serial.cache) << id << ": the cache must hold the answer, no draft";
    EXPECT_EQ(drafted.result.sampled_tokens, serial.result.sampled_tokens) << id;
    EXPECT_LE(drafted.result.passes.passes, serial.result.passes.passes) << id;
    serial_passes += serial.result.passes.passes;
    drafted_passes += drafted.result.passes.passes;
    accepted += drafted.result.accepted_draft_tokens;
  }
  EXPECT_GT(accepted, 0) << "precondition: a case without near-ties, where drafts were taken";
  EXPECT_EQ(drafted_passes + accepted, serial_passes) << "each taken draft token saves one pass";
}

TEST(Speculative, ModeGivesTheConstrainedCalls) {
  for (const char* id : kCases) {
    sw::bfcl::Case c = bfcl_case(id);
    auto tools = sw::parse_tools(c.functions);
    sw::CallOptions options;
    options.max_tokens = 256;
    options.mode = sw::DecodeMode::Constrained;
    // Fresh sessions: a prompt reused from the cache has other rounding than one computed whole.
    sw::CallResult constrained = fresh_call(model(), c.messages, tools, options);
    options.mode = sw::DecodeMode::Speculative;
    sw::CallResult speculative = fresh_call(model(), c.messages, tools, options);
    Comparison same = compare_where_decided(answer_of(constrained), answer_of(speculative));
    EXPECT_TRUE(same.agree) << id << ": " << same.report;
    if (same.whole) EXPECT_LE(speculative.stats.call_passes, constrained.stats.call_passes) << id;
    EXPECT_LE(speculative.stats.accepted_draft_tokens, speculative.stats.draft_tokens) << id;
  }
}

// The default model drafting for itself, its drafts priced as free: the mechanism of a draft
// model with drafts that are nearly always right.
TEST(Speculative, DraftModelChangesThePassesNotTheAnswer) {
  const sw::LoadedModel& m = loaded(*model());
  sw::Context draft_context(m, 2048);
  int accepted = 0;
  for (const char* id : kCases) {
    sw::bfcl::Case c = bfcl_case(id);
    sw::ModelDraft drafter(nullptr, m, draft_context, 0.0);
    Decoded serial = decode(c, nullptr);
    Decoded drafted = decode(c, &drafter);
    Comparison same = compare_where_decided(answer_of(serial), answer_of(drafted));
    EXPECT_TRUE(same.agree) << id << ": " << same.report;
    if (!same.whole) continue;
    EXPECT_EQ(drafted.cache, serial.cache) << id;
    EXPECT_LT(drafted.result.passes.passes, serial.result.passes.passes) << id;
    accepted += drafted.result.accepted_draft_tokens;
  }
  EXPECT_GT(accepted, 0) << "precondition: a case without near-ties";
}

TEST(Speculative, DraftModelMustShareTheVocabulary) {
  sw::ModelParams params{SW_TEST_MODEL_DIR "/gemma-3-270m-Q4_K_M.gguf"};
  params.vocab_only = true;
  sw::Session session(model());
  sw::CallOptions options;
  options.mode = sw::DecodeMode::Speculative;
  options.draft_model = sw::Model::load(params);
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {}}}])"));
  try {
    session.call({{"user", "hi"}}, tools, options);
    FAIL() << "a draft model with another vocabulary was accepted";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary differs"), std::string::npos) << e.what();
  }
  options.mode = sw::DecodeMode::Constrained;
  EXPECT_THROW(session.call({{"user", "hi"}}, tools, options), sw::Error);  // only speculative drafts
}

}  // namespace
