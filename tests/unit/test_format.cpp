// Call formats: detection, parsing free output, the system prompt listing the tools.
#include <gtest/gtest.h>

#include "testing.h"

namespace {

TEST(Format, DetectsFromTemplate) {
  EXPECT_EQ(sw::CallFormat::detect("{% if tools %}<tool_call>{% endif %}", false).name, "hermes");
  EXPECT_EQ(sw::CallFormat::detect("You are a helpful AI assistant named SmolLM", false).name, "smollm2");
  EXPECT_EQ(sw::CallFormat::detect("gemma", false).name, "json");
  EXPECT_EQ(sw::CallFormat::detect("", true).name, "hermes");
  EXPECT_THROW(sw::CallFormat::by_name("xml"), sw::Error);
}

TEST(Format, ParsesEachFormat) {
  auto smol = sw::CallFormat::by_name("smollm2").parse(
      R"(<tool_call>[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]</tool_call>)");
  ASSERT_EQ(smol.size(), 2u);
  EXPECT_EQ(smol[0].name, "a");
  EXPECT_EQ(smol[0].arguments["x"], 1);
  auto hermes = sw::CallFormat::by_name("hermes").parse(
      "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
      "\"arguments\": {\"s\": \"t\"}}\n</tool_call>");
  ASSERT_EQ(hermes.size(), 2u);
  EXPECT_EQ(hermes[1].arguments["s"], "t");
  auto json = sw::CallFormat::by_name("json").parse("```json\n[{\"name\": \"a\", \"arguments\": {}}]\n```");
  ASSERT_EQ(json.size(), 1u);
}

TEST(Format, AcceptsBareJsonWithoutTagsAndStringArguments) {
  auto calls = sw::CallFormat::by_name("hermes").parse(R"({"name": "a", "arguments": "{\"x\": 2}"})");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments["x"], 2);
}

TEST(Format, ParseErrorsSayWhy) {
  auto format = sw::CallFormat::by_name("smollm2");
  EXPECT_THROW(format.parse("I cannot help with that."), sw::Error);
  EXPECT_THROW(format.parse("<tool_call>[{\"name\": \"a\", \"arguments\": {"), sw::Error);
  EXPECT_THROW(format.parse("<tool_call>[]</tool_call>"), sw::Error);
  EXPECT_THROW(format.parse(R"(<tool_call>[{"arguments": {}}]</tool_call>)"), sw::Error);
  EXPECT_THROW(format.parse(R"(<tool_call>[{"name": "a", "arguments": 5}]</tool_call>)"), sw::Error);
}

TEST(Format, SystemPromptListsToolsAsJson) {
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f", "description": "does f"}])"));
  std::string hermes = sw::CallFormat::by_name("hermes").system_prompt(tools, "");
  EXPECT_NE(hermes.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"f\""), std::string::npos);
  EXPECT_NE(hermes.find("You are Qwen"), std::string::npos);
  EXPECT_EQ(sw::CallFormat::by_name("hermes").system_prompt(tools, "Be brief.").rfind("Be brief.", 0), 0u);
  std::string smol = sw::CallFormat::by_name("smollm2").system_prompt(tools, "");
  EXPECT_NE(smol.find("<tools>[{\"type\": \"function\""), std::string::npos);
}

TEST(Format, ListFormWritesTheTurnAsOneListInTheFormatsBlock) {
  const sw::CallFormat hermes = sw::CallFormat::by_name("hermes");
  const sw::CallFormat list = hermes.as_list();
  EXPECT_EQ(list.name, "hermes-list");
  // The model reads the same instructions and tool results as in its own format.
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f"}])"));
  EXPECT_EQ(list.system_prompt(tools, ""), hermes.system_prompt(tools, ""));
  EXPECT_EQ(list.tool_result("42"), hermes.tool_result("42"));
  std::vector<sw::ToolCall> calls{{"a", sw::Json::parse(R"({"x": 1})")}, {"b", sw::Json::object()}};
  const std::string text = list.calls_text(calls);
  EXPECT_EQ(text,
            "<tool_call>\n[\n    {\"name\": \"a\", \"arguments\": {\"x\": 1}},\n    "
            "{\"name\": \"b\", \"arguments\": {}}\n]\n</tool_call>");
  auto parsed = list.parse(text);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[1].name, "b");
  // Formats that already write a list are their own list form.
  EXPECT_EQ(sw::CallFormat::by_name("smollm2").as_list().opener, "<tool_call>[");
  EXPECT_EQ(sw::CallFormat::by_name("json").as_list().name, "json");
}

TEST(Format, CallTextIsCanonical) {
  sw::ToolCall call{"get_weather", sw::Json::parse(R"({"city": "Paris", "days": 3})")};
  EXPECT_EQ(sw::CallFormat::by_name("hermes").call_text(call), R"({"name": "get_weather", "arguments": {"city": "Paris", "days": 3}})");
}

}  // namespace
