// Grammars generated from schemas, and the matcher that runs them: table-driven
// accept/reject strings, forced text for jump-forward, and the generated GBNF.
#include <gtest/gtest.h>

#include "testing.h"

namespace {

sw::Schema schema_of(const char* json) {
  auto tools = sw::parse_tools(sw::Json::parse(
      std::string(R"({"name": "t", "parameters": {"type": "object", "properties": {"v": )") + json +
      R"(}, "required": ["v"]}})"));
  return tools[0].arguments[0].schema;
}

bool matches(const std::shared_ptr<const sw::Grammar>& grammar, const std::string& text) {
  sw::Matcher m(grammar);
  return m.advance(text) && m.can_end();
}

struct ValueCase {
  const char* schema;
  std::vector<const char*> accept;
  std::vector<const char*> reject;
};

TEST(ValueGrammar, AcceptsAndRejects) {
  const ValueCase cases[] = {
      {R"({"type": "string"})", {R"("")", R"("Paris")", R"("a \"q\" \\ \u00e9")", "\"caf\xc3\xa9\""},
       {"Paris", R"("unterminated)", R"("bad \x escape")", "\"a\nb\""}},
      {R"({"type": "integer"})", {"0", "42", "-7", "9007199254740993", "-1000000000000000"},
       {"007", "1.5", "-", "+1", "\"1\"", "50000000000000000", "-10000000000000000"}},
      {R"({"type": "number"})", {"0", "3.25", "-1e5", "2E-3", "10", "0.3333333333333333", "1e308"},
       {"1.", ".5", "1e", "--1", "0.33333333333333333", "12345678901234567.5", "1e0308"}},
      // Digits beyond 16 are refused where the schema sets no bound that needs them.
      {R"({"type": "integer", "minimum": 5})", {"5", "9999999999999999"}, {"4", "10000000000000000"}},
      {R"({"type": "number", "exclusiveMinimum": 0})", {"0.0000000000000001", "0.5", "7.25"},
       {"0", "0.0", "0.00000000000000001", "0.50000000000000000"}},
      {R"({"type": "boolean"})", {"true", "false"}, {"True", "1", "null"}},
      {R"({"type": "string", "enum": ["celsius", "fahrenheit"]})", {R"("celsius")", R"("fahrenheit")"},
       {R"("kelvin")", R"("celsius )"}},
      {R"({"type": "array", "items": {"type": "integer"}})", {"[]", "[1]", "[1, 2, 3]"},
       {"[1,2]", "[1, ]", R"(["a"])"}},
      {R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]})",
       {R"({"a": 1})", R"({"a": 1, "b": "x"})"}, {R"({"b": "x"})", R"({"b": "x", "a": 1})", "{}"}},
      {R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})",
       {"{}", R"({"a": 1})", R"({"b": 2})", R"({"a": 1, "b": 2})"}, {R"({, "b": 2})", R"({"b": 2, "a": 1})"}},
      {R"({"type": "dict"})", {"{}", R"({"k": [1, {"x": null}], "m": "s"})"}, {R"({k: 1})"}},
      {R"({"type": ["integer", "null"]})", {"5", "null"}, {R"("5")"}},
      {R"({"type": "any"})", {"1", R"("s")", "[true, null]", R"({"a": {}})"}, {"nan", "[1,]"}},
  };
  for (const ValueCase& c : cases) {
    auto grammar = sw::build_value_grammar(schema_of(c.schema));
    for (const char* text : c.accept) EXPECT_TRUE(matches(grammar, text)) << c.schema << " should accept " << text;
    for (const char* text : c.reject) EXPECT_FALSE(matches(grammar, text)) << c.schema << " should reject " << text;
  }
}

std::vector<sw::ToolSpec> weather_tools() {
  return sw::parse_tools(sw::Json::parse(R"([
    {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}},
    {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}])"));
}

TEST(CallGrammar, SmolLM2FormatWholeAnswer) {
  auto grammar = sw::build_call_grammar(sw::CallFormat::by_name("smollm2"), weather_tools());
  EXPECT_TRUE(matches(grammar, R"(<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>)"));
  EXPECT_TRUE(matches(grammar, R"(<tool_call>[{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}, )"
                               R"({"name": "get_time", "arguments": {"tz": "UTC"}}]</tool_call>)"));
  EXPECT_FALSE(matches(grammar, R"(<tool_call>[{"name": "get_news", "arguments": {}}]</tool_call>)"));
  EXPECT_FALSE(matches(grammar, R"(<tool_call>[{"name": "get_time", "arguments": {"city": "Paris"}}]</tool_call>)"));
  EXPECT_FALSE(matches(grammar, R"(<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}})"));
}

TEST(CallGrammar, HermesFormatSeveralBlocks) {
  auto grammar = sw::build_call_grammar(sw::CallFormat::by_name("hermes"), weather_tools());
  EXPECT_TRUE(matches(grammar, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>"));
  EXPECT_TRUE(matches(grammar, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>\n"
                               "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>"));
}

// Every mode writes the required arguments first, in declared order, then the optional ones,
// as SchemaWeaver does (its branches, then its serial tail): the serial modes are its reference.
TEST(CallGrammar, RequiredArgumentsComeFirst) {
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["b", "c"]}}])"));
  std::vector<std::string> order;
  for (const sw::Property& p : sw::reference_order(tools[0].arguments)) order.push_back(p.name);
  EXPECT_EQ(order, (std::vector<std::string>{"b", "c", "a"}));
  auto grammar = sw::build_call_grammar(sw::CallFormat::by_name("json"), tools);
  EXPECT_TRUE(matches(grammar, R"([{"name": "f", "arguments": {"b": 1, "c": 2, "a": 3}}])"));
  EXPECT_TRUE(matches(grammar, R"([{"name": "f", "arguments": {"b": 1, "c": 2}}])"));
  EXPECT_FALSE(matches(grammar, R"([{"name": "f", "arguments": {"a": 3, "b": 1, "c": 2}}])"));
}

TEST(CallGrammar, MaxCallsEndsTheTurn) {
  const sw::CallFormat format = sw::CallFormat::by_name("json");
  const std::string one = R"({"name": "get_time", "arguments": {"tz": "UTC"}})";
  auto single = sw::build_call_grammar(format, weather_tools(), 1);
  EXPECT_TRUE(matches(single, "[" + one + "]"));
  EXPECT_FALSE(matches(single, "[" + one + ", " + one + "]"));
  auto two = sw::build_call_grammar(format, weather_tools(), 2);
  EXPECT_TRUE(matches(two, "[" + one + "]"));
  EXPECT_TRUE(matches(two, "[" + one + ", " + one + "]"));
  EXPECT_FALSE(matches(two, "[" + one + ", " + one + ", " + one + "]"));
  auto any = sw::build_call_grammar(format, weather_tools(), 0);
  EXPECT_TRUE(matches(any, "[" + one + ", " + one + ", " + one + "]"));
}

TEST(CallGrammar, ListFormTakesSeveralCallsInOneBlock) {
  const std::string one = R"({"name": "get_time", "arguments": {"tz": "UTC"}})";
  auto grammar = sw::build_call_grammar(sw::CallFormat::by_name("hermes").as_list(), weather_tools());
  EXPECT_TRUE(matches(grammar, "<tool_call>\n[\n    " + one + "\n]\n</tool_call>"));
  EXPECT_TRUE(matches(grammar, "<tool_call>\n[\n    " + one + ",\n    " + one + "\n]\n</tool_call>"));
  EXPECT_FALSE(matches(grammar, "<tool_call>\n" + one + "\n</tool_call>"));
}

TEST(CallGrammar, ForcedTextIsWhatTheSchemaFixes) {
  auto grammar = sw::build_call_grammar(sw::CallFormat::by_name("smollm2"), weather_tools());
  sw::Matcher m(grammar);
  EXPECT_EQ(m.forced_text(), R"(<tool_call>[{"name": "get_)");
  ASSERT_TRUE(m.advance(R"(<tool_call>[{"name": "get_w)"));
  // Once the name is unique, the rest of it and the key of the first required argument follow.
  EXPECT_EQ(m.forced_text(), R"(eather", "arguments": {"city": ")");
  ASSERT_TRUE(m.advance(R"(eather", "arguments": {"city": "Rome)"));
  EXPECT_EQ(m.forced_text(), "");  // the string may go on
  ASSERT_TRUE(m.advance("\""));
  EXPECT_EQ(m.forced_text(), "");  // ", " for the optional unit, or "}"
  ASSERT_TRUE(m.advance("}"));
  EXPECT_EQ(m.forced_text(), "}");  // then another call or the end of the list
}

TEST(CallGrammar, MatcherRejectsWithoutChangingState) {
  auto grammar = sw::build_call_grammar(sw::CallFormat::by_name("json"), weather_tools());
  sw::Matcher m(grammar);
  EXPECT_FALSE(m.accepts("{"));
  EXPECT_TRUE(m.accepts("[{"));
  EXPECT_TRUE(m.advance("[{\"name\": \"get_time\", \"arguments\": {\"tz\": "));
  EXPECT_FALSE(m.accepts("5"));
  EXPECT_TRUE(m.accepts("\"UTC\"}}]"));
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.advance("\"UTC\"}}]"));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.can_continue());
}

TEST(CallGrammar, GbnfText) {
  auto tools = sw::parse_tools(sw::Json::parse(
      R"([{"name": "f", "parameters": {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]}}])"));
  std::string gbnf = sw::build_call_grammar(sw::CallFormat::by_name("json"), tools)->to_gbnf();
  EXPECT_NE(gbnf.find(R"(root ::= "[" call more-calls "]")"), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find(R"(call ::= "{\"name\": \"" tool)"), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find(R"(tool ::= "f\", \"arguments\": {\"b\": " args-f-b "}}")"), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find(R"(args-f-b ::= "true" | "false")"), std::string::npos) << gbnf;
}

}  // namespace

namespace {

TEST(WeaverGrammars, HeadStopsAfterTheToolName) {
  auto head = sw::build_head_grammar("<tool_call>[", sw::CallFormat::by_name("smollm2"), weather_tools());
  EXPECT_TRUE(matches(head, R"(<tool_call>[{"name": "get_weather")"));
  EXPECT_TRUE(matches(head, R"(<tool_call>[{"name": "get_time")"));
  EXPECT_FALSE(matches(head, R"(<tool_call>[{"name": "get_date")"));
  EXPECT_FALSE(matches(head, R"(<tool_call>[{"name": "get_time", )"));
  // Once the name is unique the rest is forced: the jump-forward loop completes without a pass.
  sw::Matcher m(head);
  ASSERT_TRUE(m.advance(R"(<tool_call>[{"name": "get_w)"));
  EXPECT_EQ(m.forced_text(), "eather\"");
}

TEST(WeaverGrammars, TailDecidesOptionalArgumentsAndTheEndOfTheCall) {
  sw::CallFormat format = sw::CallFormat::by_name("smollm2");
  const sw::ToolSpec weather = weather_tools()[0];
  std::vector<sw::Property> optional{*weather.find_argument("unit")};
  auto tail = sw::build_tail_grammar("\"", format, optional, true, false);
  EXPECT_TRUE(matches(tail, R"("}}]</tool_call>)"));
  EXPECT_TRUE(matches(tail, R"(", "unit": "c"}}]</tool_call>)"));
  EXPECT_TRUE(matches(tail, R"("}}, )"));  // another call follows
  auto last = sw::build_tail_grammar("\"", format, optional, true, true);
  EXPECT_TRUE(matches(last, R"("}}]</tool_call>)"));
  EXPECT_FALSE(matches(last, R"("}}, )"));  // the last call allowed
  EXPECT_FALSE(matches(tail, R"(", "unit": "c", "unit": "f"}}]</tool_call>)"));
  EXPECT_FALSE(matches(tail, R"(}}]</tool_call>)"));  // the pending text comes first
  // No member written yet: the whole arguments object, which may be empty.
  auto whole = sw::build_tail_grammar(", \"arguments\": ", format, optional, false, false);
  EXPECT_TRUE(matches(whole, R"(, "arguments": {}}]</tool_call>)"));
  EXPECT_TRUE(matches(whole, R"(, "arguments": {"unit": "f"}}]</tool_call>)"));
}

TEST(WeaverGrammars, ValueAfterTheSkeletonsLeftover) {
  auto value = sw::build_value_grammar(schema_of(R"({"type": "integer"})"), " ");
  EXPECT_TRUE(matches(value, " -12"));
  EXPECT_FALSE(matches(value, "-12"));
}

}  // namespace
