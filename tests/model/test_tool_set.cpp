// Compiled tool sets on the default model: a call with a compiled set is the call with plain
// ToolSpecs, a set compiled once compiles nothing for the next call, and the cache a server
// keeps returns one set per tool list.
#include <gtest/gtest.h>

#include "agreement.h"
#include "bfcl_case.h"
#include "schemaweaver/engine.h"

namespace {

std::shared_ptr<sw::Model> model() {
  static std::shared_ptr<sw::Model> loaded = sw::Model::load({SW_TEST_MODEL});
  return loaded;
}

// A case with several required arguments (branches) and an optional one.
sw::bfcl::Case multi_argument_case() { return bfcl_case("simple_python_27"); }

TEST(ToolSet, CompiledSetDecodesTheSameCallsAndCompilesNothingTheSecondTime) {
  sw::bfcl::Case c = multi_argument_case();
  std::vector<sw::ToolSpec> tools = sw::parse_tools(c.functions);
  for (sw::DecodeMode mode : {sw::DecodeMode::SchemaWeaver, sw::DecodeMode::JumpForward}) {
    sw::CallOptions options{mode, 128};
    sw::CallResult plain = fresh_call(model(), c.messages, tools, options);
    EXPECT_GT(plain.stats.compile_ms, 0) << sw::to_string(mode);

    auto compiled = sw::compile_tools(model(), tools);
    EXPECT_GT(compiled->compile_ms(), 0);
    ASSERT_EQ(compiled->tools().size(), tools.size());
    auto session = fresh_session(model());
    sw::CallResult first = session->call(c.messages, *compiled, options);
    sw::CallResult second = fresh_session(model())->call(c.messages, *compiled, options);
    // The same pieces compiled on first use or beforehand: the same text, in the same passes.
    EXPECT_EQ(first.text, plain.text) << sw::to_string(mode);
    EXPECT_EQ(second.text, plain.text) << sw::to_string(mode);
    EXPECT_EQ(second.stats.call_passes, plain.stats.call_passes) << sw::to_string(mode);
    // Everything the second call needs was compiled by the first.
    EXPECT_EQ(second.stats.compile_ms, 0) << sw::to_string(mode);
  }
}

TEST(ToolSet, ChosenToolIsCompiledOnceAsASetOfItsOwn) {
  sw::bfcl::Case c = multi_argument_case();
  std::vector<sw::ToolSpec> tools = sw::parse_tools(c.functions);
  sw::CallOptions options{sw::DecodeMode::SchemaWeaver, 128};
  options.tool = tools.front().name;
  auto compiled = sw::compile_tools(model(), tools);
  sw::CallResult plain = fresh_call(model(), c.messages, tools, options);
  fresh_session(model())->call(c.messages, *compiled, options);
  sw::CallResult again = fresh_session(model())->call(c.messages, *compiled, options);
  EXPECT_EQ(again.text, plain.text);
  EXPECT_EQ(again.stats.compile_ms, 0);
  options.tool = "no_such_tool";
  EXPECT_THROW(fresh_session(model())->call(c.messages, *compiled, options), sw::Error);
}

TEST(ToolSet, ASetOfAnotherModelIsRefused) {
  auto other = sw::Model::load({SW_TEST_MODEL});  // the same file, another loaded model
  auto compiled = sw::compile_tools(other, sw::parse_tools(multi_argument_case().functions));
  sw::Session session(model());
  try {
    session.call({{"user", "hi"}}, *compiled, {});
    FAIL() << "a tool set of another model was taken";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("compiled for another model"), std::string::npos) << e.what();
  }
}

TEST(ToolSet, TwoToolsOfOneNameAreRefused) {
  std::vector<sw::ToolSpec> tools = sw::parse_tools(multi_argument_case().functions);
  tools.push_back(tools.front());
  EXPECT_THROW(sw::compile_tools(model(), tools), sw::Error);
}

TEST(ToolSetCache, KeepsOneSetPerToolListAndDropsTheLeastRecentlyUsed) {
  std::vector<sw::ToolSpec> first = sw::parse_tools(multi_argument_case().functions);
  std::vector<sw::ToolSpec> second = sw::parse_tools(bfcl_case("simple_python_243").functions);
  sw::ToolSetCache cache(model(), 2);
  auto a = cache.get(first);
  EXPECT_EQ(cache.get(first), a);  // the same list: the same compiled set
  std::vector<sw::ToolSpec> read_only = first;
  read_only.front().read_only = true;  // another tool list: read-only tools get provisional calls
  auto b = cache.get(read_only);
  EXPECT_NE(b, a);
  cache.get(second);  // the cache holds two: `first`, used least recently, goes
  sw::ToolSetCache::Counts counts = cache.counts();
  EXPECT_EQ(counts.hits, 1);
  EXPECT_EQ(counts.misses, 3);
  EXPECT_EQ(counts.size, 2u);
  EXPECT_NE(cache.get(first), a);
  EXPECT_EQ(cache.counts().misses, 4);
}

}  // namespace
