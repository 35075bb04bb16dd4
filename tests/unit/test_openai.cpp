// The OpenAI chat-completions protocol: requests checked field by field, responses and stream
// chunks in OpenAI's shapes.
#include <gtest/gtest.h>

#include "schemaweaver/openai.h"

namespace {

using sw::Json;
namespace openai = sw::openai;

const char* kWeatherTool = R"({"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";

Json request(const char* extra = "") {
  std::string text = std::string(R"({"model": "m", "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [)") + kWeatherTool + "]" + extra + "}";
  return Json::parse(text);
}

// The param a RequestError names for `body`, or "no error".
std::string rejected_param(const Json& body, openai::Limits limits = {}) {
  try {
    openai::parse_chat_request(body, limits);
  } catch (const openai::RequestError& e) {
    return e.param();
  }
  return "no error";
}

TEST(OpenAiRequest, ParsesAConversationWithToolCallsAndResults) {
  Json body = Json::parse(std::string(R"({"model": "m", "tools": [)") + kWeatherTool + R"(],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "max_tokens": 64,
    "stream": true, "parallel_tool_calls": false, "x_decoding_mode": "jump-forward",
    "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"}]},
      {"role": "assistant", "content": null, "reasoning_content": "Paris, then.", "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}]})");
  openai::ChatRequest r = openai::parse_chat_request(body);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Weather in Paris?");
  ASSERT_EQ(r.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[2].tool_calls[0].arguments["city"], "Paris");
  EXPECT_EQ(r.messages[2].reasoning_content, "Paris, then.");
  EXPECT_EQ(r.messages[3].tool_call_id, "call_1");
  EXPECT_EQ(r.options.tool_choice, sw::ToolChoice::Required);
  EXPECT_EQ(r.options.tool, "get_weather");
  EXPECT_EQ(r.options.max_tokens, 64);
  EXPECT_EQ(r.options.mode, sw::DecodeMode::JumpForward);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.options.max_calls, 1);
}

TEST(OpenAiRequest, ListSwitchAsksForTheCallsAsOneList) {
  EXPECT_FALSE(openai::parse_chat_request(request()).options.calls_as_list);
  openai::ChatRequest r = openai::parse_chat_request(request(R"(, "x_decoding_mode": "jump-forward/list")"));
  EXPECT_TRUE(r.options.calls_as_list);
  EXPECT_EQ(r.options.mode, sw::DecodeMode::JumpForward);
}

TEST(OpenAiRequest, DefaultsFollowOpenAi) {
  openai::ChatRequest r = openai::parse_chat_request(request());
  EXPECT_EQ(r.options.tool_choice, sw::ToolChoice::Auto);
  EXPECT_TRUE(r.options.tool.empty());
  EXPECT_EQ(r.options.mode, sw::DecodeMode::SchemaWeaver);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.options.max_calls, 0);
  Json no_tools = Json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(openai::parse_chat_request(no_tools).options.tool_choice, sw::ToolChoice::None);
}

TEST(OpenAiRequest, TheServersDefaultForRepeatedCallsHoldsUnderAutoUnlessTheRequestSaysOtherwise) {
  const openai::RequestDefaults answer{true};
  EXPECT_FALSE(openai::parse_chat_request(request()).options.answer_instead_of_repeating);
  EXPECT_TRUE(openai::parse_chat_request(request(), {}, answer).options.answer_instead_of_repeating);
  EXPECT_FALSE(openai::parse_chat_request(request(R"(, "x_repeated_calls": "keep")"), {}, answer)
                   .options.answer_instead_of_repeating);
  // Under required, or with a response_format, there is no text to answer in: the default does
  // not apply (and is no error).
  EXPECT_FALSE(openai::parse_chat_request(request(R"(, "response_format": {"type": "json_object"})"), {}, answer)
                   .options.answer_instead_of_repeating);
  EXPECT_FALSE(openai::parse_chat_request(request(R"(, "tool_choice": "required")"), {}, answer)
                   .options.answer_instead_of_repeating);
}

TEST(OpenAiRequest, NamesTheFieldItRejects) {
  EXPECT_EQ(rejected_param(Json::array()), "");
  EXPECT_EQ(rejected_param(Json::parse(R"({"messages": []})")), "messages");
  EXPECT_EQ(rejected_param(Json::parse(R"({"messages": [{"role": "robot", "content": "x"}]})")), "messages[0].role");
  EXPECT_EQ(rejected_param(Json::parse(R"({"messages": [{"content": "x"}]})")), "messages[0].role");
  EXPECT_EQ(rejected_param(Json::parse(R"({"messages": [{"role": "user", "content": 5}]})")), "messages[0].content");
  EXPECT_EQ(rejected_param(Json::parse(R"({"messages": [{"role": "tool", "content": "x"}]})")),
            "messages[0].tool_call_id");
  EXPECT_EQ(rejected_param(Json::parse(R"({"messages": [{"role": "assistant", "tool_calls": [{"function":
              {"name": "f", "arguments": "not json"}}]}]})")), "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(rejected_param(request(R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}})")),
            "tool_choice");
  EXPECT_EQ(rejected_param(request(R"(, "tool_choice": "sometimes")")), "tool_choice");
  EXPECT_EQ(rejected_param(request(R"(, "max_tokens": 0)")), "max_tokens");
  EXPECT_EQ(rejected_param(request(R"(, "max_tokens": 100000)")), "max_tokens");
  EXPECT_EQ(rejected_param(request(R"(, "max_completion_tokens": "many")")), "max_completion_tokens");
  EXPECT_EQ(rejected_param(request(R"(, "stream": "yes")")), "stream");
  EXPECT_EQ(rejected_param(request(R"(, "x_decoding_mode": "magic")")), "x_decoding_mode");
  EXPECT_EQ(rejected_param(request(R"(, "x_decoding_mode": "jump-forward/drafts")")), "x_decoding_mode");
  EXPECT_EQ(rejected_param(request(R"(, "x_decoding_mode": "schemaweaver/fast")")), "x_decoding_mode");
  EXPECT_EQ(rejected_param(request(R"(, "x_decoding_mode": "schemaweaver/auto")")), "x_decoding_mode");
  EXPECT_EQ(rejected_param(request(R"(, "n": 2)")), "n");
  // What the answer must be, and the engine cannot give: refused, never ignored.
  // logprobs: true or false; top_logprobs 0 to 20, an integer, with logprobs only.
  EXPECT_EQ(rejected_param(request(R"(, "logprobs": "yes")")), "logprobs");
  EXPECT_EQ(rejected_param(request(R"(, "top_logprobs": 2)")), "top_logprobs");
  EXPECT_EQ(rejected_param(request(R"(, "logprobs": true, "top_logprobs": 21)")), "top_logprobs");
  EXPECT_EQ(rejected_param(request(R"(, "logprobs": true, "top_logprobs": 1.5)")), "top_logprobs");
  EXPECT_EQ(openai::parse_chat_request(request(R"(, "logprobs": true, "top_logprobs": 3)")).options.logprobs, 3);
  EXPECT_EQ(openai::parse_chat_request(request(R"(, "logprobs": true)")).options.logprobs, 0);
  EXPECT_EQ(openai::parse_chat_request(request(R"(, "logprobs": false)")).options.logprobs, -1);
  EXPECT_EQ(rejected_param(request(R"(, "logit_bias": {"50256": -100})")), "logit_bias");
  // Their neutral values, and sampling parameters, are taken.
  EXPECT_EQ(rejected_param(request(R"(, "response_format": {"type": "text"}, "stop": null, "logprobs": false,
                                       "logit_bias": {}, "temperature": 0.7, "top_p": 0.9, "seed": 3)")), "no error");
  Json required_without_tools = Json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"})");
  EXPECT_EQ(rejected_param(required_without_tools), "tool_choice");
}

// response_format json_schema: the answer is one object of the schema where no call is made; a
// call when tool_choice asks for one; under auto with tools either; refused by name where it
// cannot be honoured. json_object: an object of any keys.
TEST(OpenAiRequest, ResponseFormatJsonSchema) {
  const std::string person = R"({"type": "json_schema", "json_schema": {"name": "person", "strict": true,
    "schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
               "required": ["name", "age"], "additionalProperties": false}}})";
  Json body = Json::parse(R"({"messages": [{"role": "user", "content": "Anna, 31"}]})");
  body["response_format"] = Json::parse(person);
  openai::ChatRequest r = openai::parse_chat_request(body);
  ASSERT_TRUE(r.response_schema);
  EXPECT_EQ(r.response_schema->name, "person");
  EXPECT_EQ(r.response_schema->arguments.size(), 2u);
  EXPECT_EQ(r.options.tool_choice, sw::ToolChoice::Required);  // the schema's object is the answer

  Json with_tools = request(R"(, "tool_choice": "none")");
  with_tools["response_format"] = Json::parse(person);
  EXPECT_TRUE(openai::parse_chat_request(with_tools).response_schema);
  with_tools["tool_choice"] = "required";
  r = openai::parse_chat_request(with_tools);
  EXPECT_FALSE(r.response_schema);  // a call: no content to shape
  EXPECT_EQ(r.options.tool_choice, sw::ToolChoice::Required);
  Json unsupported = with_tools;
  unsupported["response_format"]["json_schema"]["schema"]["properties"]["age"]["not"] = Json::object();
  EXPECT_EQ(rejected_param(unsupported), "response_format.json_schema.schema");  // checked all the same
  with_tools["tool_choice"] = "auto";
  r = openai::parse_chat_request(with_tools);
  ASSERT_TRUE(r.response_schema);  // the answer where the model does not call
  EXPECT_EQ(r.options.tool_choice, sw::ToolChoice::Auto);

  Json json_object = body;
  json_object["response_format"] = Json::parse(R"({"type": "json_object"})");
  r = openai::parse_chat_request(json_object);
  ASSERT_TRUE(r.response_schema && r.response_schema->free_form_arguments);
  EXPECT_TRUE(r.response_schema->arguments.empty());
  EXPECT_EQ(r.options.tool_choice, sw::ToolChoice::Required);

  auto rejected_format = [&](const std::string& format) {
    Json b = body;
    b["response_format"] = Json::parse(format);
    return rejected_param(b);
  };
  EXPECT_EQ(rejected_format(R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array"}}})"),
            "response_format.json_schema.schema");
  EXPECT_EQ(rejected_format(R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object",
            "additionalProperties": false}}})"), "response_format.json_schema.schema");  // {} alone
  EXPECT_EQ(rejected_format(R"({"type": "json_schema", "json_schema": {"schema": {"type": "object"}}})"),
            "response_format.json_schema.name");
  EXPECT_EQ(rejected_format(R"({"type": "json_schema", "json_schema": {"name": "a b", "schema": {"type": "object",
            "properties": {"a": {"type": "string"}}}}})"), "response_format.json_schema.schema");
  EXPECT_EQ(rejected_format(R"({"type": "json_schema", "json_schema": {"name": "x", "strict": "yes", "schema": {}}})"),
            "response_format.json_schema.strict");
  EXPECT_EQ(rejected_format(R"({"type": "xml"})"), "response_format.type");
  EXPECT_EQ(rejected_format(R"("json")"), "response_format");

  sw::CallResult cut;
  cut.calls = {{"person", Json::object()}};
  cut.text = R"({"name": "An)";
  cut.error = "cut";
  cut.stopped_at_max_tokens = true;
  openai::schema_answer_as_content(cut);
  EXPECT_TRUE(cut.calls.empty());
  EXPECT_EQ(openai::failed_answer(cut).status, 0);  // content that ends early: finish_reason length
  EXPECT_EQ(openai::completion("id", "m", 0, cut)["choices"][0]["finish_reason"], "length");
}

// Sampling as OpenAI and llama-server take it; greedy where no temperature is given; the
// penalties, which the engine does not apply, refused unless neutral.
TEST(OpenAiRequest, SamplingParameters) {
  openai::ChatRequest r = openai::parse_chat_request(request());
  EXPECT_EQ(r.options.sampling.temperature, 0.0f);
  EXPECT_FALSE(r.options.sampling.seed);
  r = openai::parse_chat_request(request(R"(, "temperature": 0.7, "top_p": 0.9, "top_k": 20, "min_p": 0.1, "seed": 42)"));
  EXPECT_FLOAT_EQ(r.options.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(r.options.sampling.top_p, 0.9f);
  EXPECT_EQ(r.options.sampling.top_k, 20);
  EXPECT_FLOAT_EQ(r.options.sampling.min_p, 0.1f);
  EXPECT_EQ(r.options.sampling.seed, 42u);
  EXPECT_EQ(rejected_param(request(R"(, "temperature": 3)")), "temperature");
  EXPECT_EQ(rejected_param(request(R"(, "temperature": "hot")")), "temperature");
  EXPECT_EQ(rejected_param(request(R"(, "top_p": 1.5)")), "top_p");
  EXPECT_EQ(rejected_param(request(R"(, "top_k": 2.5)")), "top_k");
  EXPECT_EQ(rejected_param(request(R"(, "seed": "x")")), "seed");
  EXPECT_EQ(rejected_param(request(R"(, "presence_penalty": 0.5)")), "presence_penalty");
  EXPECT_EQ(rejected_param(request(R"(, "frequency_penalty": -1)")), "frequency_penalty");
  EXPECT_EQ(rejected_param(request(R"(, "repeat_penalty": 1.1)")), "repeat_penalty");
  EXPECT_EQ(rejected_param(request(R"(, "presence_penalty": 0, "frequency_penalty": 0, "repeat_penalty": 1)")), "no error");
}

// stop: a string or up to 4, each non-empty.
TEST(OpenAiRequest, StopStrings) {
  EXPECT_EQ(openai::parse_chat_request(request(R"(, "stop": "END")")).options.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(openai::parse_chat_request(request(R"(, "stop": ["\n", "."])")).options.stop,
            (std::vector<std::string>{"\n", "."}));
  EXPECT_TRUE(openai::parse_chat_request(request(R"(, "stop": null)")).options.stop.empty());
  EXPECT_EQ(rejected_param(request(R"(, "stop": ["a", "b", "c", "d", "e"])")), "stop");
  EXPECT_EQ(rejected_param(request(R"(, "stop": [""])")), "stop");
  EXPECT_EQ(rejected_param(request(R"(, "stop": 3)")), "stop");
}

// The server takes the same mode switches as the CLI (one parser, sw::apply_mode).
// Thinking as llama-server takes it: on by chat_template_kwargs' enable_thinking, its budget
// from thinking_budget_tokens (or reasoning_budget_tokens; -1 or none: max_tokens).
TEST(OpenAiRequest, ThinkingIsOnByTheTemplateKwargWithItsBudget) {
  EXPECT_EQ(openai::parse_chat_request(request()).options.thinking_budget, 0);
  EXPECT_EQ(openai::parse_chat_request(request(R"(, "thinking_budget_tokens": 32)")).options.thinking_budget, 0);
  const char* on = R"(, "chat_template_kwargs": {"enable_thinking": true}, "max_tokens": 100)";
  EXPECT_EQ(openai::parse_chat_request(request(on)).options.thinking_budget, 100);
  EXPECT_EQ(openai::parse_chat_request(request((std::string(on) + R"(, "reasoning_budget_tokens": 40)").c_str()))
                .options.thinking_budget,
            40);
  EXPECT_EQ(openai::parse_chat_request(request((std::string(on) + R"(, "thinking_budget_tokens": -1)").c_str()))
                .options.thinking_budget,
            100);
  EXPECT_EQ(openai::parse_chat_request(request(R"(, "chat_template_kwargs": {"enable_thinking": false})"))
                .options.thinking_budget,
            0);
  EXPECT_EQ(rejected_param(request(R"(, "chat_template_kwargs": [true])")), "chat_template_kwargs");
  EXPECT_EQ(rejected_param(request(R"(, "chat_template_kwargs": {"enable_thinking": "yes"})")), "enable_thinking");
  EXPECT_EQ(rejected_param(request(R"(, "thinking_budget_tokens": "many")")), "thinking_budget_tokens");
  EXPECT_EQ(rejected_param(request(R"(, "max_tokens": 10, "reasoning_budget_tokens": 11)")), "reasoning_budget_tokens");
}

// The template's other variables go to the template as they are; enable_thinking is the
// thinking switch, not one of them.
TEST(OpenAiRequest, TemplateKwargsPassThrough) {
  EXPECT_TRUE(openai::parse_chat_request(request()).options.template_kwargs.empty());
  const sw::CallOptions options = openai::parse_chat_request(
      request(R"(, "chat_template_kwargs": {"enable_thinking": true, "reasoning_effort": "low", "n": [1]})")).options;
  EXPECT_EQ(options.template_kwargs, Json::parse(R"({"reasoning_effort": "low", "n": [1]})"));
  EXPECT_GT(options.thinking_budget, 0);
}

TEST(OpenAiResponse, ReasoningIsItsOwnFieldAndDelta) {
  sw::CallResult result;
  result.text = "It is sunny.";
  result.thinking_text = "<think>\nLook outside.\n</think>\n\n";
  result.reasoning = "Look outside.";
  Json message = openai::completion("id", "m", 0, result)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "Look outside.");
  EXPECT_EQ(message["content"], "It is sunny.");
  EXPECT_EQ(openai::reasoning_chunk("id", "m", 0, "Look outside.")["choices"][0]["delta"]["reasoning_content"],
            "Look outside.");
  result.thinking_text.clear();
  result.reasoning.clear();
  EXPECT_FALSE(openai::completion("id", "m", 0, result)["choices"][0]["message"].contains("reasoning_content"));
}

TEST(OpenAiRequest, DecodingModeTakesTheSchemaWeaverSwitches) {
  openai::ChatRequest r = openai::parse_chat_request(request(R"(, "x_decoding_mode": "schemaweaver/no-padding/unverified/drafts/no-adopt")"));
  EXPECT_EQ(r.options.mode, sw::DecodeMode::SchemaWeaver);
  EXPECT_FALSE(r.options.weaver.padding);
  EXPECT_FALSE(r.options.weaver.verify);
  EXPECT_TRUE(r.options.weaver.drafts);
  EXPECT_TRUE(r.options.weaver.parallel_values);
  EXPECT_TRUE(r.options.weaver.provisional);
  EXPECT_FALSE(r.options.weaver.whole_turn);
  EXPECT_FALSE(r.options.weaver.adopt_first);
}

TEST(ModeSwitches, OwnSwitchesGoBackToTheCaller) {
  sw::CallOptions options;
  EXPECT_EQ(sw::apply_mode("speculative/draft-model/auto", options, {"draft-model"}),
            (std::vector<std::string>{"draft-model"}));
  EXPECT_EQ(options.mode, sw::DecodeMode::Speculative);
  EXPECT_EQ(options.tool_choice, sw::ToolChoice::Auto);
  EXPECT_THROW(sw::apply_mode("speculative/whole-turn", options), sw::Error);
  EXPECT_THROW(sw::apply_mode("fast", options), sw::Error);
}

TEST(OpenAiRequest, TheBodyMustBeUtf8AndJson) {
  auto code = [](const std::string& body) {
    try {
      openai::parse_chat_request(body);
    } catch (const openai::RequestError& e) {
      return e.code();
    }
    return std::string("no error");
  };
  EXPECT_EQ(code("{\"messages\": [{\"role\": \"user\", \"content\": \"caf\xc3\xa9 \xe6\x9d\xb1\"}]}"), "no error");
  EXPECT_EQ(code("{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}"), "invalid_encoding");
  EXPECT_EQ(code("{\"messages\": [{\"role\": \"user\", \"content\": \"\xc0\xaf\"}]}"), "invalid_encoding");  // overlong
  EXPECT_EQ(code("{\"messages\": [{\"role\": \"user\", \"content\": \"\xed\xa0\x80\"}]}"), "invalid_encoding");  // surrogate
  EXPECT_EQ(code("{\"messages\": [{\"role\": \"user\", \"content\": \"\xe6\x9d\"}]}"), "invalid_encoding");  // cut short
  EXPECT_EQ(code(R"({"messages": [)"), "invalid_json");
}

TEST(OpenAiRequest, RejectsInvalidSchemasAndRequestsOverTheLimits) {
  Json bad_schema = request();
  bad_schema["tools"][0]["function"]["parameters"]["properties"]["city"]["type"] = "complex";
  EXPECT_EQ(rejected_param(bad_schema), "tools");
  Json not_function = request();
  not_function["tools"][0]["type"] = "retrieval";
  EXPECT_EQ(rejected_param(not_function), "tools[0]");

  openai::Limits small;
  small.messages = 1;
  small.schema_depth = 2;
  Json two_messages = request();
  two_messages["messages"].push_back(two_messages["messages"][0]);
  EXPECT_EQ(rejected_param(two_messages, small), "messages");
  EXPECT_EQ(rejected_param(request(), small), "tools[0]");  // nests deeper than 2 levels
}

sw::CallResult weather_result() {
  sw::CallResult r;
  r.calls = {{"get_weather", Json{{"city", "Paris"}}}};
  r.stats.prompt_tokens = 100;
  r.stats.sampled_tokens = 7;
  return r;
}

TEST(OpenAiResponse, ToolCallsInOpenAisShape) {
  Json c = openai::completion("chatcmpl-1", "m", 1700000000, weather_result());
  EXPECT_EQ(c["object"], "chat.completion");
  const Json& choice = c["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  const Json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()), (Json{{"city", "Paris"}}));
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["id"], openai::call_id("chatcmpl-1", 0));
  EXPECT_NE(openai::call_id("chatcmpl-1", 0), openai::call_id("chatcmpl-1", 1));
  EXPECT_EQ(c["usage"]["total_tokens"], 107);
}

TEST(OpenAiResponse, TextWhenThereIsNoCall) {
  sw::CallResult r;
  r.text = "I cannot help with that.";
  Json c = openai::completion("chatcmpl-2", "m", 1, r);
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(c["choices"][0]["message"]["content"], r.text);
  r.stopped_at_max_tokens = true;
  EXPECT_EQ(openai::completion("chatcmpl-2", "m", 1, r)["choices"][0]["finish_reason"], "length");
}

TEST(OpenAiResponse, StreamChunksCarryCallsAndProvisionalOnesAsAnExtension) {
  EXPECT_EQ(openai::role_chunk("id", "m", 1)["choices"][0]["delta"]["role"], "assistant");
  sw::CallEvent provisional{sw::CallEvent::Kind::Provisional, 0, {"get_weather", Json{{"city", "Paris"}}}, 5.0, false};
  Json early = openai::call_chunk("id", "m", 1, provisional);
  EXPECT_FALSE(early["choices"][0]["delta"].contains("tool_calls"));  // clients that do not know it see nothing
  EXPECT_EQ(early["x_provisional_call"]["function"]["name"], "get_weather");
  sw::CallEvent final_call{sw::CallEvent::Kind::Final, 0, {"get_weather", Json{{"city", "Rome"}}}, 9.0, true};
  Json last = openai::call_chunk("id", "m", 1, final_call);
  EXPECT_EQ(last["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
  EXPECT_EQ(last["x_replaces_provisional"], true);
  Json end = openai::final_chunk("id", "m", 1, weather_result());
  EXPECT_EQ(end["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(end["object"], "chat.completion.chunk");
  Json error = openai::error_body("bad", "invalid_request_error", "messages", "missing");
  EXPECT_EQ(error["error"]["param"], "messages");
}

// A call's deltas: its id, type and name once, then argument pieces; its final event adds what
// no delta told (all of it where none came) and refuses a call the deltas part from.
TEST(OpenAiResponse, CallChunksTellEachCallOnceInPieces) {
  openai::CallChunks chunks("id", "m", 1);
  auto call_of = [](const Json& chunk) { return chunk["choices"][0]["delta"]["tool_calls"][0]; };
  Json head = call_of(chunks.delta({0, "get_weather", ""}));
  EXPECT_EQ(head["id"], openai::call_id("id", 0));
  EXPECT_EQ(head["type"], "function");
  EXPECT_EQ(head["function"]["name"], "get_weather");
  Json piece = call_of(chunks.delta({0, "", "{\"city\": \"Pa"}));
  EXPECT_FALSE(piece.contains("id"));
  EXPECT_FALSE(piece["function"].contains("name"));
  EXPECT_EQ(piece["function"]["arguments"], "{\"city\": \"Pa");
  sw::CallEvent final_call{sw::CallEvent::Kind::Final, 0, {"get_weather", Json{{"city", "Paris"}}}, 9.0, false};
  EXPECT_EQ(call_of(chunks.event(final_call))["function"]["arguments"], "ris\"}");  // the rest
  EXPECT_TRUE(chunks.delta({0, "", "ris\"}"}).is_null());  // after the final event: told already
  // A call no delta told comes whole; one the deltas part from is an error, never a wrong call.
  sw::CallEvent second{sw::CallEvent::Kind::Final, 1, {"get_time", Json::object()}, 10.0, false};
  EXPECT_EQ(call_of(chunks.event(second))["function"]["name"], "get_time");
  chunks.delta({2, "get_weather", "{\"city\": \"Rome"});
  sw::CallEvent parted{sw::CallEvent::Kind::Final, 2, {"get_weather", Json{{"city", "Oslo"}}}, 11.0, false};
  EXPECT_THROW(chunks.event(parted), sw::Error);
}

// A reply's logprobs in OpenAI's shape: each token with its bytes and its alternatives.
TEST(OpenAiResponse, LogprobsOfAReply) {
  sw::CallResult r;
  r.text = "Hi";
  r.logprobs = {{"Hi", -0.5f, {{"Hi", -0.5f}, {"Hello", -1.5f}}}};
  const Json c = openai::completion("id", "m", 1, r)["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(c["token"], "Hi");
  EXPECT_EQ(c["bytes"], (Json{72, 105}));
  EXPECT_FLOAT_EQ(c["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(c["top_logprobs"][1]["token"], "Hello");
  EXPECT_TRUE(openai::completion("id", "m", 1, weather_result())["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(openai::final_chunk("id", "m", 1, r)["choices"][0]["logprobs"]["content"].size(), 1u);
}

}  // namespace
