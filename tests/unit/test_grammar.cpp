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

// An answer in a schema is the object alone: no name, no markers, one object.
TEST(CallGrammar, SchemaAnswerIsTheObjectAlone) {
  const sw::CallFormat format = sw::CallFormat::schema_answer();
  const std::vector<sw::ToolSpec> answer = {weather_tools()[0]};
  auto grammar = sw::build_call_grammar(format, answer);
  EXPECT_TRUE(matches(grammar, R"({"city": "Paris"})"));
  EXPECT_TRUE(matches(grammar, R"({"city": "Oslo", "unit": "c"})"));
  EXPECT_FALSE(matches(grammar, R"({"name": "get_weather", "arguments": {"city": "Paris"}})"));
  EXPECT_FALSE(matches(grammar, R"({"city": "Paris"}, {"city": "Oslo"})"));
  EXPECT_FALSE(matches(grammar, R"({"unit": "c"})"));
  EXPECT_EQ(format.call_head("get_weather"), "");
  EXPECT_THROW(sw::build_head_grammar("", format, answer), sw::Error);  // nothing to name
  EXPECT_THROW(format.as_list(), sw::Error);

  auto parsed = format.parse(" {\"city\": \"Paris\"}\n", answer);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].name, "get_weather");
  EXPECT_EQ(parsed[0].arguments, sw::Json::parse(R"({"city": "Paris"})"));
  EXPECT_THROW(format.parse(R"({"city": "Paris"} and more)", answer), sw::Error);
  EXPECT_THROW(format.parse(R"({"city": "Par)", answer), sw::Error);
}

TEST(CallGrammar, HermesFormatSeveralBlocks) {
  auto grammar = sw::build_call_grammar(sw::CallFormat::by_name("hermes"), weather_tools());
  EXPECT_TRUE(matches(grammar, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>"));
  EXPECT_TRUE(matches(grammar, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>\n"
                               "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>"));
}

// A turn that ends on a new line after its last call is not the beginning of another call; where
// no other call may follow, the turn ends at its closer, with no pass spent on a line break.
TEST(CallGrammar, ALineBreakAfterTheLastCallMayEndTheTurn) {
  const sw::CallFormat format = sw::CallFormat::by_name("hermes");
  const std::string call = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>";
  auto any = sw::build_call_grammar(format, weather_tools());
  EXPECT_TRUE(matches(any, call + "\n"));
  EXPECT_FALSE(matches(any, call + "\n\n"));
  auto single = sw::build_call_grammar(format, weather_tools(), 1);
  EXPECT_TRUE(matches(single, call));
  EXPECT_FALSE(matches(single, call + "\n"));
  const sw::ToolSpec weather = weather_tools()[0];
  std::vector<sw::Property> optional{*weather.find_argument("unit")};
  auto tail = sw::build_tail_grammar("\"", format, optional, sw::Members::Written, sw::NextCall::Allowed);
  EXPECT_TRUE(matches(tail, "\"}}\n</tool_call>\n"));
  EXPECT_TRUE(matches(tail, "\"}}\n</tool_call>\n<tool_call>\n"));  // another call follows
  auto last = sw::build_tail_grammar("\"", format, optional, sw::Members::Written, sw::NextCall::Forbidden);
  EXPECT_FALSE(matches(last, "\"}}\n</tool_call>\n"));
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
  auto tail = sw::build_tail_grammar("\"", format, optional, sw::Members::Written, sw::NextCall::Allowed);
  EXPECT_TRUE(matches(tail, R"("}}]</tool_call>)"));
  EXPECT_TRUE(matches(tail, R"(", "unit": "c"}}]</tool_call>)"));
  EXPECT_TRUE(matches(tail, R"("}}, )"));  // another call follows
  auto last = sw::build_tail_grammar("\"", format, optional, sw::Members::Written, sw::NextCall::Forbidden);
  EXPECT_TRUE(matches(last, R"("}}]</tool_call>)"));
  EXPECT_FALSE(matches(last, R"("}}, )"));  // the last call allowed
  EXPECT_FALSE(matches(tail, R"(", "unit": "c", "unit": "f"}}]</tool_call>)"));
  EXPECT_FALSE(matches(tail, R"(}}]</tool_call>)"));  // the pending text comes first
  // No member written yet: the whole arguments object, which may be empty.
  auto whole = sw::build_tail_grammar(", \"arguments\": ", format, optional, sw::Members::NoneYet, sw::NextCall::Allowed);
  EXPECT_TRUE(matches(whole, R"(, "arguments": {}}]</tool_call>)"));
  EXPECT_TRUE(matches(whole, R"(, "arguments": {"unit": "f"}}]</tool_call>)"));
}

// The fewest bytes that end a sentence from where the matcher stands: what closes an answer in
// a schema cut off at max_tokens.
TEST(Matcher, ShortestCompletionEndsTheSentenceWithTheFewestBytes) {
  auto completion = [](const char* schema, const std::string& text) {
    sw::Matcher m(sw::build_value_grammar(schema_of(schema), ""));
    EXPECT_TRUE(m.advance(text)) << text;
    const std::string rest = m.shortest_completion();
    EXPECT_TRUE(m.advance(rest) && m.can_end()) << schema << ": " << text << rest;
    return rest;
  };
  EXPECT_EQ(completion(R"({"type": "string"})", R"("Tom Brady, Tom)"), "\"");
  EXPECT_EQ(completion(R"({"type": "string"})", R"("a\)"), "\"\"");  // the escape's character, then the quote
  EXPECT_EQ(completion(R"({"type": "string", "minLength": 3})", R"("a)"), "  \"");
  EXPECT_EQ(completion(R"({"type": "integer", "minimum": 10})", ""), "10");
  EXPECT_EQ(completion(R"({"type": "integer"})", "-"), "0");  // of equal lengths, the first in byte order
  EXPECT_EQ(completion(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1})", "["), "true]");
  EXPECT_EQ(completion(R"({"type": "string", "enum": ["Paris", "Rome"]})", ""), "\"Rome\"");
  EXPECT_EQ(completion(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                          "required": ["a", "b"]})", R"({"a": 1)"), R"(, "b": ""})");
  EXPECT_EQ(completion(R"({"type": "integer"})", "12"), "") << "a sentence that may end needs nothing";
}

TEST(WeaverGrammars, ValueAfterTheSkeletonsLeftover) {
  auto value = sw::build_value_grammar(schema_of(R"({"type": "integer"})"), " ");
  EXPECT_TRUE(matches(value, " -12"));
  EXPECT_FALSE(matches(value, "-12"));
}

}  // namespace

namespace {

// Qwen3-Coder's tagged syntax, as llama.cpp's analysis of its template gives it.
sw::CallFormat tagged_format() {
  sw::CallFormat f;
  f.name = f.family = "template";
  f.json_call = false;
  f.opener = "<tool_call>\n", f.closer = "\n</tool_call>", f.separator = "\n</tool_call>\n<tool_call>\n";
  f.call_start = "<tool_call>", f.call_end = "</tool_call>";
  f.name_prefix = "<function=", f.name_suffix = ">\n", f.args_prefix = "", f.call_suffix = "</function>";
  f.arguments.tagged = true;
  f.arguments.open = f.arguments.close = f.arguments.separator = "";
  f.arguments.name_prefix = "<parameter=", f.arguments.name_suffix = ">\n";
  f.arguments.value_suffix = "\n</parameter>\n";
  return f;
}

const char* const kEnd = "\n</parameter>\n";

// A raw string runs to the first end marker, whatever it holds before: quotes, backslashes,
// newlines, even the marker's own beginning.
TEST(TaggedGrammar, RawStringEndsAtTheFirstEndMarker) {
  const sw::ArgumentSyntax syntax = tagged_format().arguments;
  auto text = sw::build_value_grammar(schema_of(R"({"type": "string"})"), "", syntax);
  for (std::string raw : {"", "Paris", "say \"hi\" \\o/", "two\nlines", "a\n</param", "x\n</parameter>y"})
    EXPECT_TRUE(matches(text, raw + kEnd)) << raw;
  EXPECT_FALSE(matches(text, "Paris"));
  EXPECT_FALSE(matches(text, std::string("a") + kEnd + "b" + kEnd));
  // An integer is JSON, then the marker.
  auto integer = sw::build_value_grammar(schema_of(R"({"type": "integer"})"), "", syntax);
  EXPECT_TRUE(matches(integer, std::string("42") + kEnd));
  EXPECT_FALSE(matches(integer, std::string("\"42\"") + kEnd));
  // An enum's members and a constrained string are raw too; a constrained one holds no newline.
  auto member = sw::build_value_grammar(schema_of(R"({"type": "string", "enum": ["18:00", "a b"]})"), "", syntax);
  EXPECT_TRUE(matches(member, std::string("a b") + kEnd));
  EXPECT_FALSE(matches(member, std::string("\"a b\"") + kEnd));
  auto phone = sw::build_value_grammar(schema_of(R"({"type": "string", "pattern": "^[0-9]{3}$"})"), "", syntax);
  EXPECT_TRUE(matches(phone, std::string("123") + kEnd));
  EXPECT_FALSE(matches(phone, std::string("1234") + kEnd));
  auto short_text = sw::build_value_grammar(schema_of(R"({"type": "string", "maxLength": 4})"), "", syntax);
  EXPECT_TRUE(matches(short_text, std::string("\"ok\"") + kEnd));
  EXPECT_FALSE(matches(short_text, std::string("a\nb") + kEnd));
}

TEST(TaggedGrammar, CallsWriteEachArgumentBetweenItsMarkers) {
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "book", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "guests": {"type": "integer"}, "note": {"type": "string"}},
      "required": ["city", "guests"]}}])"));
  auto grammar = sw::build_call_grammar(tagged_format(), tools);
  const std::string head = "<tool_call>\n<function=book>\n<parameter=city>\nRome\n</parameter>\n<parameter=guests>\n2\n</parameter>\n";
  EXPECT_TRUE(matches(grammar, head + "</function>\n</tool_call>"));
  EXPECT_TRUE(matches(grammar, head + "<parameter=note>\nby the window\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(matches(grammar, "<tool_call>\n<function=book>\n<parameter=guests>\n2\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(matches(grammar, "<tool_call>\n{\"name\": \"book\", \"arguments\": {\"city\": \"Rome\", \"guests\": 2}}\n</tool_call>"));
}

// llama.cpp reads a raw value as a string wherever its schema may be one, so a value that may be
// a string or a number cannot be written raw without becoming a string: refused, by name.
TEST(TaggedGrammar, AValueThatMayBeAStringOrNotIsRefusedByName) {
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}, "required": ["v"]}}])"));
  try {
    sw::build_call_grammar(tagged_format(), tools);
    FAIL() << "a mixed value was accepted";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("argument 'v'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(sw::build_call_grammar(sw::CallFormat::by_name("hermes"), tools));
}

// The text a tagged call is written in reads back into the call, its values by their schema:
// a string argument holding "7" stays a string, an integer argument is a number.
TEST(TaggedFormat, CallTextReadsBackByTheSchema) {
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "code": {"type": "string"}, "count": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["code", "count"]}}])"));
  const sw::CallFormat format = tagged_format();
  const sw::ToolCall call{"f", sw::Json::parse(R"({"code": "7", "count": 7, "tags": ["a \"b\"", "c\nd"]})")};
  const std::string text = format.calls_text({call, call});
  EXPECT_NE(text.find("<parameter=code>\n7\n</parameter>\n<parameter=count>\n7\n</parameter>"), std::string::npos) << text;
  std::vector<sw::ToolCall> read = format.parse(text, tools);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1], call);
  EXPECT_TRUE(read[0].arguments["code"].is_string());
  EXPECT_THROW(format.parse("<tool_call>\n<function=f>\n<parameter=code>\nunclosed", tools), sw::Error);
  // A raw value becomes a JSON string: bytes that are not UTF-8 (a stray lead, an overlong form,
  // a surrogate) make it no value; well-formed ones of every length do.
  const std::string before = "<tool_call>\n<function=f>\n<parameter=count>\n1\n</parameter>\n<parameter=code>\n";
  for (const char* bad : {"\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF", "a\xC3"})
    EXPECT_THROW(format.parse(before + bad + "\n</parameter>\n</function>", tools), sw::Error) << bad;
  EXPECT_EQ(format.parse(before + "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n</parameter>\n</function>", tools)[0]
                .arguments["code"],
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_THROW(format.parse("<tool_call>\n<function=f>\n<parameter=count>\nseven\n</parameter>\n</function>", tools), sw::Error);
}

// Keywords and JSON values: every kind of value, strings holding the call's own punctuation
// (parentheses, commas, "=", quotes), the calls of a turn after one another, no arguments.
TEST(PythonLikeCalls, CallTextReadsBackAndTheGrammarHoldsIt) {
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "code": {"type": "string"}, "count": {"type": "integer"}, "on": {"type": "boolean"}, "tags": {"type": "array",
      "items": {"type": "string"}}, "at": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
      "required": ["code", "count"]}}, {"name": "g", "parameters": {"type": "object", "properties": {}}}])"));
  const sw::CallFormat format = sw::CallFormat::python_like_calls();
  const sw::ToolCall f{"f", sw::Json::parse(R"json({"code": "a(b), c=\"d\")", "count": -3, "on": true, "tags": ["x", "y, z"],
                                                "at": {"x": 1.5}})json")};
  const sw::ToolCall g{"g", sw::Json::object()};
  const std::string text = format.calls_text({f, g, f});
  EXPECT_EQ(text.rfind("<|tool_call_start|>[f(code=\"a(b), c=\\\"d\\\")\", count=-3, on=true, ", 0), 0u) << text;
  std::vector<sw::ToolCall> read = format.parse(text, tools);
  ASSERT_EQ(read.size(), 3u) << text;
  EXPECT_EQ(read[0], f);
  EXPECT_EQ(read[1], g);
  EXPECT_EQ(read[2], f);
  auto grammar = sw::build_call_grammar(format, tools);
  EXPECT_TRUE(matches(grammar, format.calls_text({f}))) << format.calls_text({f});
  EXPECT_TRUE(matches(grammar, format.calls_text({g})));
  EXPECT_FALSE(matches(grammar, "<|tool_call_start|>[f(count=1, code=\"a\")]<|tool_call_end|>"));  // out of order
  EXPECT_FALSE(matches(grammar, "<|tool_call_start|>[f(code='a', count=1)]<|tool_call_end|>"));     // not JSON
  EXPECT_THROW(format.parse("<|tool_call_start|>[f(code=\"a\", count=)]<|tool_call_end|>", tools), sw::Error);
}

// A python-like call closes at its ")" outside its JSON strings: "(555) 123" inside a value
// does not close it; a tagged call's raw values hold no strings to skip.
TEST(PythonLikeCalls, TheCallClosesAtItsParenthesisOutsideStrings) {
  const sw::CallFormat format = sw::CallFormat::python_like_calls();
  ASSERT_EQ(format.call_close_marker(), ")");
  sw::CallTracker tracker(sw::Clock::now(), format.call_close_marker(), true);
  tracker.feed("<|tool_call_start|>[f(phone=\"(555) 1\\\")2\", n=1");
  EXPECT_TRUE(tracker.closed_ms().empty());
  tracker.feed(")]");
  EXPECT_EQ(tracker.closed_ms().size(), 1u);
  sw::CallTracker raw(sw::Clock::now(), ")", false);
  raw.feed("f(phone=\"(555)");
  EXPECT_EQ(raw.closed_ms().size(), 1u);
}

// Gemma 4's notation: strings raw between <|"|> (quotes, backslashes, newlines and braces as they
// are), keys bare at every depth, numbers and literals as JSON; what its grammar writes reads back.
TEST(Gemma4Calls, ValuesInTheirNotationReadBackAndTheGrammarHoldsThem) {
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "code": {"type": "string"}, "count": {"type": "integer"}, "kind": {"type": "string", "enum": ["a b", "c"]},
      "tags": {"type": "array", "items": {"type": "string"}}, "at": {"type": "object", "properties": {
      "x": {"type": "number"}, "label": {"type": "string", "maxLength": 3}}, "required": ["x", "label"]},
      "extra": {"type": "object"}}, "required": ["code", "count", "kind"]}}])"));
  const sw::CallFormat format = sw::CallFormat::gemma4_calls();
  const sw::ToolCall call{"f", sw::Json::parse(R"json({"code": "say \"hi\" {a:b}\n\\", "count": -3, "kind": "a b",
      "tags": ["x", "y,z"], "at": {"x": 1.5, "label": "ok"}, "extra": {"k": [true, null]}})json")};
  const std::string text = format.calls_text({call, call});
  EXPECT_EQ(text.rfind("<|tool_call>call:f{code:<|\"|>say \"hi\" {a:b}\n\\<|\"|>,count:-3,kind:<|\"|>a b<|\"|>,"
                       "tags:[<|\"|>x<|\"|>,<|\"|>y,z<|\"|>],at:{x:1.5,label:<|\"|>ok<|\"|>},extra:{k:[true,null]}}"
                       "<tool_call|>", 0), 0u) << text;
  std::vector<sw::ToolCall> read = format.parse(text, tools);
  ASSERT_EQ(read.size(), 2u) << text;
  EXPECT_EQ(read[0], call);
  EXPECT_EQ(read[1], call);
  auto grammar = sw::build_call_grammar(format, tools);
  EXPECT_TRUE(matches(grammar, format.calls_text({call}))) << format.calls_text({call});
  EXPECT_FALSE(matches(grammar, "<|tool_call>call:f{code:\"a\",count:1,kind:<|\"|>c<|\"|>}<tool_call|>"));  // JSON string
  EXPECT_FALSE(matches(grammar, "<|tool_call>call:f{code:<|\"|>a<|\"|>,count:1,kind:<|\"|>d<|\"|>}<tool_call|>"));
  EXPECT_FALSE(matches(grammar, "<|tool_call>call:f{code:<|\"|>a<|\"|>,count:1,kind:<|\"|>c<|\"|>,at:{x:1,"
                                "label:<|\"|>long<|\"|>}}<tool_call|>"));  // maxLength
  // A string holding the quote cannot be written; a value that is not in the notation does not read.
  EXPECT_THROW(format.calls_text({{"f", sw::Json::parse(R"({"code": "<|\"|>"})")}}), sw::Error);
  EXPECT_THROW(format.parse("<|tool_call>call:f{code:\"a\",count:1}<tool_call|>", tools), sw::Error);
}

// A keyword is an identifier: an argument named otherwise cannot be written, and says so.
TEST(PythonLikeCalls, AnArgumentNameThatIsNoIdentifierIsRefusedByName) {
  auto tools = sw::parse_tools(sw::Json::parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "first-name": {"type": "string"}}, "required": ["first-name"]}}])"));
  try {
    sw::build_call_grammar(sw::CallFormat::python_like_calls(), tools);
    FAIL() << "a name that is no identifier was accepted";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'first-name'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(sw::build_call_grammar(sw::CallFormat::by_name("hermes"), tools));
}

}  // namespace
