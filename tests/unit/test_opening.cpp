// The call-or-text decision under tool_choice auto: every opening form models write, each seen
// whole, cut short (undecided) and gone wrong (text), in every call format.
#include <gtest/gtest.h>

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
        "  \n{ \"name\" : \"g"};
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
                           "Here is the call: {\"name\": \"get_weather\""}) {
    EXPECT_EQ(classify(text), sw::Opening::Text) << text;
  }
  // A format without tags does not take a tag for a call.
  EXPECT_EQ(classify("<tool_call>", "json"), sw::Opening::Text);
}

}  // namespace
