// The C API (schemaweaver/schemaweaver.h) at every entry point, on SmolLM2-135M: what it returns
// against the C++ API's answer to the same call, and every error path a caller can walk into -
// each a status and a message, never an exception or a crash.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "call_from_c.h"
#include "schemaweaver/engine.h"
#include "schemaweaver/schemaweaver.h"

namespace {

const char* kParis = R"([{"role": "user", "content": "What is the weather like in Paris?"}])";

std::string file_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string weather_tools() { return file_text(SW_EXAMPLES "/weather_tools.json"); }

// Handles that free themselves.
using ModelHandle = std::unique_ptr<schemaweaver_model, decltype(&schemaweaver_model_free)>;
using ToolsHandle = std::unique_ptr<schemaweaver_tools, decltype(&schemaweaver_tools_free)>;
using SessionHandle = std::unique_ptr<schemaweaver_session, decltype(&schemaweaver_session_free)>;

ModelHandle load(const char* path) {
  return {schemaweaver_model_load(path, schemaweaver_model_default_params()), schemaweaver_model_free};
}

const ModelHandle& model() {
  static ModelHandle loaded = load(SW_TEST_MODEL);
  return loaded;
}

ToolsHandle compile(const schemaweaver_model* m, const char* tools_json) {
  return {schemaweaver_tools_compile(m, tools_json), schemaweaver_tools_free};
}

SessionHandle session_on(const schemaweaver_model* m) {
  return {schemaweaver_session_new(m), schemaweaver_session_free};
}

// One call's status and result (parsed; null where there is none).
struct Called {
  schemaweaver_status status;
  sw::Json result;
};

Called call(schemaweaver_session* session, const char* messages, const schemaweaver_tools* tools,
            const schemaweaver_call_params* params) {
  char* text = nullptr;
  const schemaweaver_status status = schemaweaver_session_call(session, messages, tools, params, &text);
  Called called{status, text ? sw::Json::parse(text) : sw::Json()};
  schemaweaver_free(text);
  return called;
}

bool says(const char* message, const std::string& part) {
  return message && std::string(message).find(part) != std::string::npos;
}

TEST(CApi, VersionsAreTheLibrarysOwn) {
  EXPECT_EQ(schemaweaver_version(), sw::version().schemaweaver);
  EXPECT_EQ(schemaweaver_llama_version(), sw::version().llama_cpp);
  schemaweaver_free(nullptr);
}

// A call through the C API is the C++ API's call, its final events told as they come.
TEST(CApi, ACallIsTheCppApisCallWithItsEvents) {
  ASSERT_EQ(schemaweaver_model_error(model().get()), nullptr);
  ToolsHandle tools = compile(model().get(), weather_tools().c_str());
  ASSERT_EQ(schemaweaver_tools_error(tools.get()), nullptr);
  SessionHandle session = session_on(model().get());
  ASSERT_EQ(schemaweaver_session_error(session.get()), nullptr);

  struct Seen {
    int finals = 0;
    std::string last_call;
  } seen;
  schemaweaver_call_params params = schemaweaver_call_default_params();
  params.max_tokens = 64;
  params.user_data = &seen;
  params.on_call = [](schemaweaver_event_kind kind, int32_t index, const char* call_json, bool, void* data) {
    auto* s = static_cast<Seen*>(data);
    if (kind == SCHEMAWEAVER_EVENT_FINAL && index == 0) ++s->finals;
    s->last_call = call_json;
  };
  Called called = call(session.get(), kParis, tools.get(), &params);
  ASSERT_EQ(called.status, SCHEMAWEAVER_OK) << schemaweaver_session_error(session.get());
  EXPECT_EQ(schemaweaver_session_error(session.get()), nullptr);

  std::ifstream file(SW_EXAMPLES "/weather_tools.json");
  sw::Session reference(sw::Model::load({SW_TEST_MODEL}));
  sw::CallResult expected =
      reference.call({{"user", "What is the weather like in Paris?"}}, sw::parse_tools(sw::Json::parse(file)),
                     {sw::DecodeMode::SchemaWeaver, 64});
  ASSERT_EQ(expected.calls.size(), 1u) << expected.text;
  EXPECT_EQ(called.result["text"], expected.text);
  ASSERT_EQ(called.result["calls"].size(), 1u) << called.result.dump();
  EXPECT_EQ(called.result["calls"][0], expected.calls[0].to_json());
  EXPECT_EQ(called.result["error"], "");
  EXPECT_EQ(seen.finals, 1);
  EXPECT_EQ(sw::Json::parse(seen.last_call), expected.calls[0].to_json());
  EXPECT_GT(called.result["stats"]["prompt_tokens"].get<int>(), 100);

  // A session keeps its prompt: the same call again reuses it.
  Called again = call(session.get(), kParis, tools.get(), nullptr);
  ASSERT_EQ(again.status, SCHEMAWEAVER_OK);
  EXPECT_EQ(again.result["calls"], called.result["calls"]);
  EXPECT_GT(again.result["stats"]["prompt_reused_tokens"].get<int>(), 100);
}

// The same from a C translation unit, as an app in C makes it.
TEST(CApi, ACallFromC) {
  char out[8192];
  ASSERT_EQ(call_from_c(SW_TEST_MODEL, weather_tools().c_str(), kParis, out, sizeof out), SCHEMAWEAVER_OK) << out;
  const std::string text = out;
  EXPECT_EQ(text.substr(0, 2), "1 ");
  sw::Json result = sw::Json::parse(text.substr(2));
  ASSERT_EQ(result["calls"].size(), 1u);
  EXPECT_EQ(result["calls"][0]["name"], "get_weather");
  EXPECT_EQ(result["calls"][0]["arguments"]["city"], "Paris");
}

TEST(CApi, AStructuredOutputAndTheModelsInfo) {
  ToolsHandle schema = {schemaweaver_schema_compile(model().get(), file_text(SW_TEST_DATA "/person_schema.json").c_str()),
                        schemaweaver_tools_free};
  ASSERT_EQ(schemaweaver_tools_error(schema.get()), nullptr);
  SessionHandle session = session_on(model().get());
  schemaweaver_call_params params = schemaweaver_call_default_params();
  params.mode = "jump-forward";
  params.max_tokens = 64;
  Called called = call(session.get(), R"([{"role": "user", "content": "Anna, 31, lives in Rome."}])", schema.get(), &params);
  ASSERT_EQ(called.status, SCHEMAWEAVER_OK) << schemaweaver_session_error(session.get());
  const sw::Json answer = sw::Json::parse(called.result["text"].get<std::string>());
  EXPECT_TRUE(answer["name"].is_string() && answer["age"].is_number_integer() && answer["city"].is_string())
      << answer.dump();

  // Beside tools under auto: SmolLM2 answers this request in words, so its answer is the object.
  ToolsHandle tools = compile(model().get(), weather_tools().c_str());
  params.tool_choice = "auto";
  params.answer_schema = schema.get();
  Called beside = call(session.get(), kParis, tools.get(), &params);
  ASSERT_EQ(beside.status, SCHEMAWEAVER_OK) << schemaweaver_session_error(session.get());
  EXPECT_TRUE(beside.result["schema_answer"].get<bool>());
  EXPECT_TRUE(sw::Json::parse(beside.result["text"].get<std::string>())["age"].is_number_integer()) << beside.result["text"];
  params.tool_choice = "required";
  EXPECT_EQ(call(session.get(), kParis, tools.get(), &params).status, SCHEMAWEAVER_BAD_INPUT);

  char* info = schemaweaver_model_info(model().get());
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(sw::Json::parse(info)["vocab_size"], 49152);
  schemaweaver_free(info);
}

// tool_choice as the server takes it: none is a reply in text, drawn when a temperature is given.
TEST(CApi, ToolChoiceNoneRepliesInText) {
  ToolsHandle tools = compile(model().get(), weather_tools().c_str());
  SessionHandle session = session_on(model().get());
  schemaweaver_call_params params = schemaweaver_call_default_params();
  params.tool_choice = "none";
  params.max_tokens = 12;
  params.temperature = 0.7f;
  params.seed = 7;
  params.seeded = true;
  Called first = call(session.get(), kParis, tools.get(), &params);
  ASSERT_EQ(first.status, SCHEMAWEAVER_OK) << schemaweaver_session_error(session.get());
  EXPECT_TRUE(first.result["text_reply"].get<bool>());
  EXPECT_TRUE(first.result["calls"].empty());
  EXPECT_FALSE(first.result["text"].get<std::string>().empty());
  EXPECT_EQ(call(session.get(), kParis, tools.get(), &params).result["text"], first.result["text"]);  // the seed's draws
}

// Every error a caller can make: a status (or a failed handle) and a message that says what.
TEST(CApi, ErrorsAreStatusesWithTheirMessages) {
  ModelHandle missing = load("/nonexistent.gguf");
  ASSERT_NE(missing, nullptr);
  EXPECT_TRUE(says(schemaweaver_model_error(missing.get()), "cannot open model file"));
  EXPECT_EQ(schemaweaver_model_info(missing.get()), nullptr);
  ModelHandle corrupt = load(SW_TEST_DATA "/corrupt.gguf");
  EXPECT_TRUE(says(schemaweaver_model_error(corrupt.get()), "failed to load model"));
  EXPECT_TRUE(says(schemaweaver_model_error(load(nullptr).get()), "NULL"));
  EXPECT_TRUE(says(schemaweaver_model_error(nullptr), "NULL"));

  // What is made from a model that failed fails, and says so.
  ToolsHandle on_missing = compile(missing.get(), weather_tools().c_str());
  EXPECT_TRUE(says(schemaweaver_tools_error(on_missing.get()), "failed to load"));
  SessionHandle session_on_missing = session_on(missing.get());
  EXPECT_TRUE(says(schemaweaver_session_error(session_on_missing.get()), "failed to load"));
  EXPECT_TRUE(says(schemaweaver_tools_error(compile(nullptr, "[]").get()), "NULL"));

  EXPECT_TRUE(says(schemaweaver_tools_error(compile(model().get(), "[{").get()), "not valid JSON"));
  EXPECT_TRUE(says(schemaweaver_tools_error(compile(model().get(), nullptr).get()), "NULL"));
  const std::string refused = file_text(SW_TEST_DATA "/unknown_type_tools.json");
  EXPECT_TRUE(says(schemaweaver_tools_error(compile(model().get(), refused.c_str()).get()), "complex"));
  ToolsHandle bad_schema = {schemaweaver_schema_compile(model().get(), R"({"type": "string"})"), schemaweaver_tools_free};
  EXPECT_NE(schemaweaver_tools_error(bad_schema.get()), nullptr);

  ToolsHandle tools = compile(model().get(), weather_tools().c_str());
  SessionHandle session = session_on(model().get());
  char* result = reinterpret_cast<char*>(1);
  EXPECT_EQ(schemaweaver_session_call(nullptr, kParis, tools.get(), nullptr, &result), SCHEMAWEAVER_INVALID_ARGUMENT);
  EXPECT_EQ(result, nullptr);
  EXPECT_EQ(schemaweaver_session_call(session.get(), kParis, tools.get(), nullptr, nullptr), SCHEMAWEAVER_INVALID_ARGUMENT);
  EXPECT_EQ(call(session_on_missing.get(), kParis, tools.get(), nullptr).status, SCHEMAWEAVER_INVALID_ARGUMENT);
  EXPECT_EQ(call(session.get(), kParis, on_missing.get(), nullptr).status, SCHEMAWEAVER_INVALID_ARGUMENT);
  EXPECT_TRUE(says(schemaweaver_session_error(session.get()), "failed to compile"));
  EXPECT_EQ(call(session.get(), kParis, nullptr, nullptr).status, SCHEMAWEAVER_INVALID_ARGUMENT);

  auto refused_with = [&](const char* messages, const schemaweaver_call_params& params, const std::string& part) {
    Called called = call(session.get(), messages, tools.get(), &params);
    EXPECT_EQ(called.status, SCHEMAWEAVER_BAD_INPUT) << part;
    EXPECT_TRUE(called.result.is_null());
    EXPECT_TRUE(says(schemaweaver_session_error(session.get()), part)) << schemaweaver_session_error(session.get());
  };
  const schemaweaver_call_params defaults = schemaweaver_call_default_params();
  refused_with("[{\"role\": ", defaults, "not valid JSON");
  refused_with(nullptr, defaults, "NULL");
  refused_with(R"([{"role": "robot", "content": "hi"}])", defaults, "robot");
  refused_with("[]", defaults, "non-empty");
  const std::string too_long = R"([{"role": "user", "content": ")" + std::string(40000, 'a') + "\"}]";
  refused_with(too_long.c_str(), defaults, "exceeds the context");
  schemaweaver_call_params params = defaults;
  params.mode = "fastest";
  refused_with(kParis, params, "fastest");
  params = defaults;
  params.tool_choice = "sometimes";
  refused_with(kParis, params, "sometimes");
  params = defaults;
  params.max_tokens = 0;
  refused_with(kParis, params, "max_tokens");
  params = defaults;
  params.top_p = 0;
  refused_with(kParis, params, "top_p");
  params = defaults;
  params.thinking_budget = -1;
  refused_with(kParis, params, "thinking_budget");

  // After all that the session still calls.
  EXPECT_EQ(call(session.get(), kParis, tools.get(), nullptr).status, SCHEMAWEAVER_OK);
  EXPECT_EQ(schemaweaver_session_error(session.get()), nullptr);
}

// The cancel callback stops a call between passes; the session then makes the next call whole.
TEST(CApi, ACancelledCallStopsAndTheSessionGoesOn) {
  ToolsHandle tools = compile(model().get(), weather_tools().c_str());
  SessionHandle session = session_on(model().get());
  int polls = 0;
  schemaweaver_call_params params = schemaweaver_call_default_params();
  params.mode = "constrained";
  params.max_tokens = 64;
  params.user_data = &polls;
  params.cancel = [](void* data) { return ++*static_cast<int*>(data) > 3; };
  Called cancelled = call(session.get(), kParis, tools.get(), &params);
  EXPECT_EQ(cancelled.status, SCHEMAWEAVER_CANCELLED);
  EXPECT_TRUE(cancelled.result.is_null());
  EXPECT_NE(schemaweaver_session_error(session.get()), nullptr);
  EXPECT_EQ(polls, 4);

  params.cancel = nullptr;
  Called whole = call(session.get(), kParis, tools.get(), &params);
  ASSERT_EQ(whole.status, SCHEMAWEAVER_OK);
  EXPECT_EQ(whole.result["calls"][0]["name"], "get_weather");
}

// llama.cpp's log reaches the app's C callback while one is set.
TEST(CApi, TheLogGoesToTheAppsCallback) {
  std::string logged;
  schemaweaver_set_log(
      [](schemaweaver_log_level level, const char* text, void* data) {
        if (level == SCHEMAWEAVER_LOG_INFO) *static_cast<std::string*>(data) += text;
      },
      &logged);
  ModelHandle again = load(SW_TEST_MODEL);
  schemaweaver_set_log(nullptr, nullptr);
  const size_t while_set = logged.size();
  load(SW_TEST_MODEL);
  EXPECT_NE(logged.find("llama_model_loader"), std::string::npos);
  EXPECT_EQ(logged.size(), while_set);
}

}  // namespace
