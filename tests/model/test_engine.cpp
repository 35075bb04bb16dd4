// End to end on the real default model (SmolLM2-135M-Instruct Q4_1): load, prompt, decode in
// every mode, parse, check. Greedy decoding makes every assertion here deterministic.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "agreement.h"
#include "bfcl/bfcl.h"
#include "bfcl_case.h"
#include "schemaweaver/engine.h"

namespace {

std::shared_ptr<sw::Model> model() {
  static std::shared_ptr<sw::Model> loaded = sw::Model::load({SW_TEST_MODEL});
  return loaded;
}

std::vector<sw::ToolSpec> weather_tools() {
  std::ifstream file(SW_EXAMPLES "/weather_tools.json");
  return sw::parse_tools(sw::Json::parse(file));
}

sw::CallResult weather_call(sw::DecodeMode mode) {
  return fresh_call(model(), {{"user", "What is the weather like in Paris?"}}, weather_tools(), {mode, 64});
}

TEST(Engine, InfoDescribesTheModel) {
  sw::ModelInfo info = model()->info();
  EXPECT_EQ(info.call_format, "smollm2");
  EXPECT_EQ(info.vocab_size, 49152);
  EXPECT_GT(info.weight_bytes, 50u << 20);
  EXPECT_NE(info.llama_version.find("4df29be"), std::string::npos);
}

// Constrained modes always produce a schema-valid call.
void expect_schema_valid_weather_call(const sw::CallResult& r) {
  ASSERT_TRUE(r.error.empty()) << r.error << "\n" << r.text;
  ASSERT_EQ(r.calls.size(), 1u) << r.text;
  EXPECT_EQ(r.calls[0].name, "get_weather");
  ASSERT_TRUE(r.calls[0].arguments.contains("city"));
  EXPECT_EQ(r.calls[0].arguments["city"], "Paris");
  for (const auto& [key, value] : r.calls[0].arguments.items()) {
    EXPECT_TRUE(key == "city" || key == "unit") << key;
    if (key == "unit") EXPECT_TRUE(value == "celsius" || value == "fahrenheit") << value;
  }
}

TEST(Engine, ConstrainedCall) {
  sw::CallResult r = weather_call(sw::DecodeMode::Constrained);
  expect_schema_valid_weather_call(r);
  EXPECT_EQ(r.stats.call_prefill_passes, 0);
  EXPECT_EQ(r.stats.call_passes, r.stats.call_tokens);  // one token per pass
  EXPECT_GT(r.stats.prompt_tokens, 100);
  EXPECT_GT(r.stats.peak_rss_kb, 0);
}

TEST(Engine, JumpForwardCallIsTheSameCallInFewerPasses) {
  sw::CallResult constrained = weather_call(sw::DecodeMode::Constrained);
  sw::CallResult jumped = weather_call(sw::DecodeMode::JumpForward);
  expect_schema_valid_weather_call(jumped);
  EXPECT_TRUE(agree_where_decided(constrained, jumped));
  EXPECT_GT(jumped.stats.call_prefill_passes, 0);
  EXPECT_LT(jumped.stats.call_passes, constrained.stats.call_passes / 2);
  EXPECT_LT(jumped.stats.sampled_tokens, constrained.stats.sampled_tokens);
}

TEST(Engine, FreeDecodingReturnsTextAndAVerdict) {
  // SmolLM2-135M rarely writes a call without a grammar; the mode must still end cleanly,
  // with either parsed calls or a reason.
  sw::CallResult r = weather_call(sw::DecodeMode::Free);
  EXPECT_FALSE(r.text.empty());
  EXPECT_TRUE(!r.calls.empty() || !r.error.empty());
  EXPECT_EQ(r.stats.call_passes, r.stats.sampled_tokens - (r.error.empty() ? 1 : 0));
}

TEST(Engine, McpToolsWork) {
  std::ifstream file(SW_EXAMPLES "/mcp_time_tools.json");
  auto tools = sw::parse_tools(sw::Json::parse(file));
  auto session = fresh_session(model());
  auto r = session->call({{"user", "What time is it in Tokyo?"}}, tools, {sw::DecodeMode::JumpForward, 64});
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.calls.at(0).name, "get_current_time");
  EXPECT_TRUE(r.calls.at(0).arguments["timezone"].is_string());
}

TEST(Engine, PromptPrefixIsReusedAcrossCalls) {
  auto session = fresh_session(model());
  auto tools = weather_tools();
  auto first = session->call({{"user", "Weather in Oslo?"}}, tools, {sw::DecodeMode::JumpForward, 64});
  auto second = session->call({{"user", "Weather in Rome?"}}, tools, {sw::DecodeMode::JumpForward, 64});
  EXPECT_EQ(first.stats.prompt_reused_tokens, 0);
  EXPECT_GT(second.stats.prompt_reused_tokens, second.stats.prompt_tokens / 2);
  ASSERT_TRUE(second.error.empty());
  EXPECT_EQ(second.calls.at(0).arguments["city"], "Rome");
}

// The same prompt again continues from the logits the first call left after it: no pass, and the
// answer bit for bit the first's (a last token fed again alone would round otherwise). Another
// prompt in between makes the session compute the last token again.
TEST(Engine, RepeatedPromptIsNotComputedAgain) {
  auto session = fresh_session(model());
  auto tools = weather_tools();
  const std::vector<sw::Message> oslo{{"user", "Weather in Oslo?"}};
  auto first = session->call(oslo, tools, {sw::DecodeMode::JumpForward, 64});
  auto again = session->call(oslo, tools, {sw::DecodeMode::JumpForward, 64});
  EXPECT_EQ(again.stats.prompt_passes, 0);
  EXPECT_EQ(again.stats.prompt_reused_tokens, again.stats.prompt_tokens);
  EXPECT_EQ(again.text, first.text);
  EXPECT_EQ(again.stats.call_passes, first.stats.call_passes);

  session->call({{"user", "Weather in Rome?"}}, tools, {sw::DecodeMode::JumpForward, 64});
  auto after_another = session->call(oslo, tools, {sw::DecodeMode::JumpForward, 64});
  EXPECT_EQ(after_another.stats.prompt_passes, 1);
  EXPECT_LT(after_another.stats.prompt_reused_tokens, after_another.stats.prompt_tokens);
}

// Easy BFCL cases the default model gets right in the constrained modes (seen in bfcl runs).
TEST(Engine, CorrectOnEasyBfclCases) {
  auto session = fresh_session(model());
  for (const char* id : {"simple_python_97", "simple_python_142", "multiple_50"}) {
    sw::bfcl::Case c = bfcl_case(id);
    auto tools = sw::parse_tools(c.functions);
    for (sw::DecodeMode mode : {sw::DecodeMode::Constrained, sw::DecodeMode::JumpForward, sw::DecodeMode::SchemaWeaver}) {
      sw::CallOptions options;
      options.mode = mode;
      options.max_tokens = 128;
      auto r = session->call(c.messages, tools, options);
      auto verdict = sw::bfcl::check(c, r.calls);
      EXPECT_TRUE(verdict.valid) << id << " " << sw::to_string(mode) << ": " << verdict.error << "\n" << r.text;
    }
  }
}

// A reply in text's tokens with their log probabilities (CallOptions::logprobs): the tokens spell
// the reply, each is the likeliest (greedy), the alternatives come likeliest first and weigh no
// more than everything. A call has none; an answer in a schema refuses them.
TEST(Engine, AReplysLogprobsSpellItAndWeighItsTokens) {
  sw::Session session(model());
  sw::CallOptions options{sw::DecodeMode::JumpForward, 24};
  options.tool_choice = sw::ToolChoice::None;
  options.logprobs = 3;
  const sw::CallResult reply = session.call({{"user", "Say hello."}}, weather_tools(), options);
  ASSERT_TRUE(reply.text_reply);
  std::string spelled;
  for (const sw::TokenLogprob& t : reply.logprobs) {
    spelled += t.token;
    ASSERT_EQ(t.top.size(), 3u);
    EXPECT_EQ(t.top[0].first, t.token) << "a greedy reply takes the likeliest token";
    EXPECT_FLOAT_EQ(t.top[0].second, t.logprob);
    EXPECT_GE(t.top[0].second, t.top[1].second);
    EXPECT_GE(t.top[1].second, t.top[2].second);
    EXPECT_LE(std::exp(t.top[0].second) + std::exp(t.top[1].second) + std::exp(t.top[2].second), 1.0 + 1e-4);
  }
  EXPECT_EQ(spelled, reply.text);
  options.tool_choice = sw::ToolChoice::Required;
  EXPECT_TRUE(session.call({{"user", "Weather in Paris?"}}, weather_tools(), options).logprobs.empty());
  const sw::ToolSpec person = sw::parse_response_schema(
      sw::Json::parse(R"({"type": "object", "properties": {"name": {"type": "string"}}})"), "person");
  EXPECT_THROW(session.call({{"user", "Ada"}}, *sw::compile_schema(model(), person), options), sw::Error);
  options.logprobs = 21;
  EXPECT_THROW(session.call({{"user", "hi"}}, weather_tools(), options), sw::Error);
}

TEST(Engine, BadInputGivesClearErrors) {
  sw::Session session(model());
  EXPECT_THROW(session.call({{"user", "hi"}}, {}, {}), sw::Error);
  EXPECT_THROW(session.call({}, weather_tools(), {}), sw::Error);
  EXPECT_THROW(session.call({{"robot", "hi"}}, weather_tools(), {}), sw::Error);
  try {
    session.call({{"user", std::string(40000, 'a')}}, weather_tools(), {});
    ADD_FAILURE() << "no error for a prompt longer than the context";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the context"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sw::Model::load({"/nonexistent.gguf"}), sw::Error);
}

// The library prints nothing: llama.cpp's log goes to the app's callback, and nowhere once the
// callback is taken away; a failed load still says llama.cpp's reason in its error.
TEST(Engine, LlamasLogGoesToTheAppsCallbackAndNothingIsPrinted) {
  std::vector<std::pair<sw::LogLevel, std::string>> routed;
  sw::set_log_callback([&](sw::LogLevel level, const std::string& text) { routed.push_back({level, text}); });
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  sw::Session session(sw::Model::load({SW_TEST_MODEL}));
  sw::CallResult r = session.call({{"user", "What is the weather like in Paris?"}}, weather_tools(),
                                  {sw::DecodeMode::JumpForward, 32});
  EXPECT_THROW(sw::Model::load({SW_TEST_DATA "/corrupt.gguf"}), sw::Error);
  sw::set_log_callback({});
  const size_t while_set = routed.size();
  sw::Model::load({SW_TEST_MODEL});
  const std::string printed = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  EXPECT_EQ(printed, "");
  EXPECT_EQ(r.calls.size(), 1u) << r.text;
  EXPECT_EQ(routed.size(), while_set);
  auto logged = [&](sw::LogLevel level, const std::string& part) {
    return std::any_of(routed.begin(), routed.end(), [&](const auto& line) {
      return line.first == level && line.second.find(part) != std::string::npos;
    });
  };
  EXPECT_TRUE(logged(sw::LogLevel::Info, "llama_model_loader")) << while_set << " pieces routed";
  EXPECT_TRUE(logged(sw::LogLevel::Error, "corrupt.gguf"));
}

// Measurements are kept where the app says, and nowhere else: not under $HOME or
// $SCHEMAWEAVER_CACHE (the CLI's defaults) when it says nowhere.
TEST(Engine, PassCostsAreKeptOnlyWhereTheAppSays) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("sw-measurements-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string home = (root / "home").string(), told = (root / "told").string();
  auto saved = [](const char* name) { const char* v = std::getenv(name); return std::string(v ? v : ""); };
  const std::string saved_home = saved("HOME"), saved_cache = saved("SCHEMAWEAVER_CACHE");
  setenv("HOME", home.c_str(), 1);
  setenv("SCHEMAWEAVER_CACHE", home.c_str(), 1);
  auto call_with = [&](const std::string& measurements_dir) {
    sw::ModelParams params{SW_TEST_MODEL};
    params.measurements_dir = measurements_dir;
    sw::Session session(sw::Model::load(params));
    session.call({{"user", "What is the weather like in Paris?"}}, weather_tools(), {sw::DecodeMode::JumpForward, 32});
  };
  call_with("");
  call_with(told);
  setenv("HOME", saved_home.c_str(), 1);
  setenv("SCHEMAWEAVER_CACHE", saved_cache.c_str(), 1);
  EXPECT_FALSE(fs::exists(home));
  size_t kept = 0;
  if (fs::exists(fs::path(told) / "pass-costs"))
    for (const auto& entry : fs::directory_iterator(fs::path(told) / "pass-costs")) kept += entry.path().extension() == ".json";
  EXPECT_EQ(kept, 1u);
  fs::remove_all(root);
}

}  // namespace
