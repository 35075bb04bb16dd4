// The call-or-text decision under tool_choice auto: every opening form models write, each seen
// whole, cut short (undecided) and gone wrong (text), in every call format.
#include <gtest/gtest.h>

#include <optional>
#include <tuple>

#include "testing.h"

namespace {

std::vector<sw::ToolSpec> weather_tools() {
  return sw::parse_tools(sw::Json::parse(R"([
    {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    {"name": "get_time", "parameters": {"type": "object", "properties": {}}}])"));
}

sw::Opening classify(const std::string& text, const std::string& format = "hermes") {
  return sw::classify_opening(text, sw::CallFormat::by_name(format), weather_tools());
}

// Each form whole is a call, and every shorter prefix of it is undecided. A name's first letter
// decides when it begins a known tool's name.
TEST(Opening, EveryFormIsACallAndItsPrefixesUndecided) {
  for (std::string format : {"hermes", "smollm2", "json"}) {
    std::vector<std::string> calls = {
        "```json\n{",                    "```\n[",  "{\"name\": \"g",       "[{\"name\":\"g",
        "get_weather(",                  "[get_time(",              "```tool_code\nget_weather(", "```python\nget_time(",
        "  \n{ \"name\" : \"g",    "{{\"name\": \"g",        "[{{ \"name\": \"g",   "get_weather {",
        "get_time\n{"};
    if (format != "json") calls.push_back("<tool_call>");
    if (format != "json") calls.push_back("```xml\n<tool_call>");
    for (const std::string& call : calls) {
      EXPECT_EQ(classify(call, format), sw::Opening::Call) << format << ": " << call;
      for (size_t n = 0; n < call.size(); ++n)
        EXPECT_EQ(classify(call.substr(0, n), format), sw::Opening::Undecided) << format << ": " << call.substr(0, n);
    }
  }
}

// Where calls name their tool in markers (Qwen3-Coder's <function=NAME>), that marker and a
// tool's name begun open a call even without the marker of the turn's calls.
TEST(Opening, TheMarkerOfANameOpensACall) {
  sw::CallFormat format = sw::CallFormat::by_name("hermes");
  format.json_call = false;
  format.name_prefix = "<function=", format.name_suffix = ">\n";
  EXPECT_EQ(sw::classify_opening("<function=get_w", format, weather_tools()), sw::Opening::Call);
  EXPECT_EQ(sw::classify_opening("<function=", format, weather_tools()), sw::Opening::Undecided);
  EXPECT_EQ(sw::classify_opening("<functional>", format, weather_tools()), sw::Opening::Text);
  EXPECT_EQ(sw::classify_opening("<function=search", format, weather_tools()), sw::Opening::Text);
  EXPECT_EQ(classify("<function=get_w"), sw::Opening::Text);  // JSON calls name their tool in JSON
}

TEST(Opening, TextAndJsonThatNamesNoToolAreText) {
  for (const char* text : {"The weather in Oslo", "Sure! ", "{\"name\": \"Joke\"", "{\"city\": \"Oslo\"}",
                           "[1, 2]", "```\nprint(1)", "get_weatherman(",
                           "get_weather is a tool", "{\"name\": \"get_weather_report\"", "<tool>",
                           "Here is the call: {\"name\": \"get_weather\"", "{{\"name\": \"Joke\"", "{{{",
                           "get_weather\n\nIt is sunny", "get_time  x"}) {
    EXPECT_EQ(classify(text), sw::Opening::Text) << text;
  }
  // A format without tags does not take a tag for a call.
  EXPECT_EQ(classify("<tool_call>", "json"), sw::Opening::Text);
}

// JSON a call opens outside the format's markers is written in that form: its fence, bare, one
// object or a list. The format's marker, a name, doubled braces and text are left to the format.
TEST(Opening, JsonOutsideTheMarkersKeepsItsForm) {
  const sw::CallFormat hermes = sw::CallFormat::by_name("hermes");
  const auto form = [&](const std::string& text) { return sw::json_opening(text, hermes, weather_tools()); };
  for (const auto& [text, fence, list] :
       std::vector<std::tuple<std::string, std::string, bool>>{{"```json\n{", "```json\n", false},
                                                               {" \n```\n[", "```\n", true},
                                                               {"{\"name\": \"g", "", false},
                                                               {"[{\"name\":\"g", "", true},
                                                               {"```json\n{\"name\": \"Joke\"", "```json\n", false}}) {
    const std::optional<sw::JsonOpening> opened = form(text);
    ASSERT_TRUE(opened) << text;
    EXPECT_EQ(opened->fence, fence) << text;
    EXPECT_EQ(opened->list, list) << text;
  }
  for (const char* text : {"<tool_call>", "```xml\n<tool_call>", "get_weather(", "```python\nget_time(",
                           "get_weather {", "{{\"name\": \"g", "[{{ \"name\": \"g", "The weather"})
    EXPECT_FALSE(form(text)) << text;
  sw::CallFormat tagged = hermes;
  tagged.json_call = false;
  EXPECT_FALSE(sw::json_opening("```json\n{", tagged, weather_tools()));
}

// A call in its opened form ends the turn with its fence: no second call after it, its JSON the
// format's own, and what it writes reads back as the call.
TEST(Opening, TheOpenedFormsGrammarEndsTheTurnWithTheFence) {
  const sw::CallFormat fenced = sw::CallFormat::by_name("hermes").opened_as("```json\n", false);
  const std::string one = R"({"name": "get_time", "arguments": {}})";
  const auto grammar = sw::build_call_grammar(fenced, weather_tools());
  sw::Matcher matcher(grammar);
  EXPECT_TRUE(matcher.advance("```json\n" + one + "\n```"));
  EXPECT_TRUE(matcher.can_end());
  EXPECT_FALSE(sw::Matcher(grammar).advance("```json\n" + one + "\n```\n<tool_call>"));
  EXPECT_EQ(fenced.parse("```json\n" + one + "\n```").size(), 1u);
  const sw::CallFormat list = sw::CallFormat::by_name("hermes").opened_as("", true);
  EXPECT_TRUE(sw::Matcher(sw::build_call_grammar(list, weather_tools())).advance("[" + one + ", " + one + "]"));
  EXPECT_EQ(list.parse("[" + one + ", " + one + "]").size(), 2u);
  sw::CallFormat tagged = sw::CallFormat::by_name("hermes");
  tagged.json_call = false;
  EXPECT_THROW(tagged.opened_as("", false), sw::Error);
}

}  // namespace

namespace {

sw::ToolCall weather_call(const std::string& city) { return {"get_weather", {{"city", city}}}; }

sw::Message assistant_calling(std::vector<sw::ToolCall> calls) {
  sw::Message m{"assistant", ""};
  m.tool_calls = std::move(calls);
  return m;
}

}  // namespace

// A call repeats when the conversation made the same call (tool and arguments) and a tool
// message followed it; a call still waiting for its result, another city or another tool do not.
TEST(RepeatedCalls, AreTheAnsweredCallsMadeAgain) {
  const std::vector<sw::Message> answered = {{"user", "Weather in Paris and Oslo?"},
                                             assistant_calling({weather_call("Paris"), weather_call("Oslo")}),
                                             {"tool", "Sunny"},
                                             {"tool", "Rain"}};
  EXPECT_EQ(sw::repeated_calls(answered, {weather_call("Paris")}), 1);
  EXPECT_EQ(sw::repeated_calls(answered, {weather_call("Oslo"), weather_call("Paris")}), 2);
  EXPECT_EQ(sw::repeated_calls(answered, {weather_call("Rome"), weather_call("Paris")}), 1);
  EXPECT_EQ(sw::repeated_calls(answered, {sw::ToolCall{"get_time", {{"city", "Paris"}}}}), 0);
  const std::vector<sw::Message> waiting = {{"user", "Weather in Paris?"}, assistant_calling({weather_call("Paris")})};
  EXPECT_EQ(sw::repeated_calls(waiting, {weather_call("Paris")}), 0);
  EXPECT_EQ(sw::repeated_calls({{"user", "Weather in Paris?"}}, {weather_call("Paris")}), 0);
  // The call's id is not part of what it asks.
  sw::ToolCall with_id = weather_call("Paris");
  with_id.id = "call_7";
  EXPECT_EQ(sw::repeated_calls(answered, {with_id}), 1);
}

// Held call callbacks tell nothing until released, then everything in the order it came.
TEST(RepeatedCalls, HeldCallsAreToldInOrderOnRelease) {
  std::vector<std::string> told;
  sw::CallOptions options;
  options.on_call = [&](const sw::CallEvent& e) { told.push_back("call " + e.call.name); };
  options.on_call_delta = [&](const sw::CallDelta& d) { told.push_back("delta " + d.arguments); };
  sw::HeldCalls held;
  const sw::CallOptions holding = held.holding(options);
  holding.on_call_delta(sw::CallDelta{0, "get_weather", "{\"city\": "});
  holding.on_call_delta(sw::CallDelta{0, "", "\"Paris\"}"});
  sw::CallEvent event;
  event.call = weather_call("Paris");
  holding.on_call(event);
  EXPECT_TRUE(told.empty());
  held.release(options);
  EXPECT_EQ(told, (std::vector<std::string>{"delta {\"city\": ", "delta \"Paris\"}", "call get_weather"}));
}
