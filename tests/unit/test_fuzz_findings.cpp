// Inputs the fuzz targets (fuzz/) found, kept in tests/data/fuzz: each once crashed the code it
// reached (an exception other than sw::Error, or a read past the end). Here each gets the clean
// answer it has now; the sanitizer build also replays every file through its target.
#include <fstream>
#include <sstream>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "schemaweaver/openai.h"
#include "testing.h"

namespace {

std::string finding(const std::string& name) {
  std::ifstream in(std::string(SW_TEST_DATA) + "/fuzz/" + name, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// fuzz_tool_schemas: a recursive array unfolded to its bound was closed with a maxItems of 0
// stored as a signed number, which the keyword check then refused as not a count: the tool
// (keyword_tools.json's add_task) could not be read. The innermost array now admits only [].
TEST(FuzzFindings, ARecursiveArrayBeyondTheBoundIsEmpty) {
  const std::string input = finding("tools-recursive-array-beyond-bound.bin");
  const std::vector<sw::ToolSpec> tools = sw::parse_tools(sw::Json::parse(input.substr(0, input.find('\0'))));
  const sw::ToolSpec* add_task = nullptr;
  for (const sw::ToolSpec& t : tools) add_task = t.name == "add_task" ? &t : add_task;
  ASSERT_NE(add_task, nullptr);
  auto subtasks = [](const sw::Schema& task) -> const sw::Schema& {
    for (const sw::Property& p : task.properties) {
      if (p.name == "subtasks") return p.schema;
    }
    throw std::runtime_error("no subtasks");
  };
  const sw::Schema* task = &add_task->find_argument("task")->schema;
  for (int level = 1; level < 3; ++level) task = subtasks(*task).items.get();
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(subtasks(*task).checks.at("maxItems"), 0);
}

// fuzz_tool_schemas: an enum beside a format no grammar enforces read the format's pattern
// from nowhere; the format is refused now, whatever sits beside it.
TEST(FuzzFindings, AnUnknownFormatBesideAnEnumIsRefused) {
  const std::string input = finding("tools-enum-beside-unknown-format.bin");
  try {
    sw::parse_tools(sw::Json::parse(input.substr(0, input.find('\0'))));
    ADD_FAILURE() << "accepted";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("format 'emailng' cannot be enforced"), std::string::npos) << e.what();
  }
}

// fuzz_openai_request: a tool entry whose "type" is an object threw JSON's type_error.
TEST(FuzzFindings, AToolTypeThatIsNoStringIsABadRequest) {
  EXPECT_THROW(sw::openai::parse_chat_request(finding("request-tool-type-not-a-string.json")), sw::openai::RequestError);
}

// fuzz_call_output: a call whose name holds the format's closing tag did not survive being
// written and read again; such a name names no tool.
TEST(FuzzFindings, ANameHoldingTheClosingTagNamesNoTool) {
  const std::vector<sw::ToolCall> calls = sw::CallFormat::by_name("hermes").parse(finding("output-name-holds-the-closing-tag.txt"));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_FALSE(sw::valid_tool_name(calls[0].name));
  EXPECT_THROW(sw::parse_tools(sw::Json::parse(R"([{"name": "get</tool_call>x"}])")), sw::Error);
  EXPECT_TRUE(sw::valid_tool_name("math.factorial"));
  EXPECT_TRUE(sw::valid_tool_name("github/create_issue"));
}

// fuzz_pattern: a text that is not UTF-8 reaches the model's JSON as U+FFFD; the grammar's
// strings decode to text the pattern matches (the target's property, once checked on the raw
// bytes instead).
TEST(FuzzFindings, WhatAPatternsGrammarAcceptsDecodesToAMatch) {
  const std::string input = finding("pattern-text-not-utf8.bin");
  const std::string source = input.substr(0, input.find('\0')), text = input.substr(input.find('\0') + 1);
  sw::Schema schema;
  schema.type = sw::Type::String;
  schema.checks["pattern"] = source;
  sw::Matcher matcher(sw::build_value_grammar(schema));
  const std::string json = sw::Json(text).dump(-1, ' ', false, sw::Json::error_handler_t::replace);
  ASSERT_TRUE(matcher.advance(json) && matcher.can_end()) << json;
  EXPECT_TRUE(sw::Pattern(source).search(sw::Json::parse(json).get<std::string>()));
}

// fuzz_pattern: a counted repeat repeated (`^.{215}+`) gave a grammar of thousands of states,
// and naming each rule took time in the rules named so far (14 s under the sanitizers); the
// grammar is built, and checks the text, as it should.
TEST(FuzzFindings, APatternOfThousandsOfStatesBuildsItsGrammar) {
  const std::string input = finding("pattern-repeated-counted-repeat.bin");
  sw::Schema schema;
  schema.type = sw::Type::String;
  schema.checks["pattern"] = input.substr(0, input.find('\0'));
  sw::Matcher matcher(sw::build_value_grammar(schema));
  EXPECT_TRUE(matcher.accepts("\"" + std::string(215, 'x')));
  EXPECT_FALSE(matcher.accepts("\"" + std::string(214, 'x') + "\""));
}

// fuzz_pattern: repeats stacked on repeats (`bc*++++++++++++*+***`) made `x+` two copies of x
// each, a program of 2^13 copies, whose grammar took minutes to build. `x+` is now one copy
// looping back: the pattern is the program of `bc*`, and means what it says: a b, then any run of c.
TEST(FuzzFindings, RepeatsStackedOnRepeatsBuildAtOnce) {
  const std::string input = finding("pattern-nested-repeats.bin");
  const std::string source = input.substr(0, input.find('\0'));
  ASSERT_EQ(source.substr(0, 16), "bc*++++++++++++*");
  const std::string stacked = "^" + source.substr(0, 20) + "$";  // ^bc*++++++++++++*+***$
  EXPECT_EQ(sw::Pattern(stacked).instructions().size(), sw::Pattern("^bc*$").instructions().size());
  sw::Schema schema;
  schema.type = sw::Type::String;
  schema.checks["pattern"] = stacked;
  sw::Matcher matcher(sw::build_value_grammar(schema));
  EXPECT_TRUE(matcher.accepts("\"bccc\""));
  EXPECT_TRUE(matcher.accepts("\"b\""));
  EXPECT_FALSE(matcher.accepts("\"bcb\""));
  // A program of nearly 200000 instructions, nearly all branches: refused by the bound on the
  // steps its grammar's construction may take (that bound, not a clock, keeps it short).
  schema.checks["pattern"] = "^((a*b*)*c?)*(((a*b*)*c?)*d?){1000}$";
  try {
    sw::build_value_grammar(schema);
    ADD_FAILURE() << "built";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("branches too much"), std::string::npos) << e.what();
  }
}

// fuzz_pattern: `.*{2,65}` made an automaton that could be in 65 copies of `.*` at once; its
// grammar kept about 2300 parses alive and matched a byte in 18 ms (a text of 80 bytes took
// over 10 s under the sanitizers). A repeat of a repeat is now the one repeat it equals: the
// pattern is the program it is without `{2,65}`.
TEST(FuzzFindings, ARepeatOfARepeatIsOneRepeat) {
  const std::string input = finding("pattern-repeated-star.bin");
  const std::string source = input.substr(0, input.find('\0')), text = input.substr(input.find('\0') + 1);
  ASSERT_EQ(source.substr(0, 9), "^.*{2,65}");
  EXPECT_EQ(sw::Pattern(source).instructions().size(), sw::Pattern("^.*" + source.substr(9)).instructions().size());
  sw::Schema schema;
  schema.type = sw::Type::String;
  schema.checks["pattern"] = source;
  sw::Matcher matcher(sw::build_value_grammar(schema));
  matcher.advance(sw::Json(text).dump(-1, ' ', false, sw::Json::error_handler_t::replace));
  // The same strings as before: a repeat of a repeat means what it meant.
  for (const auto& [pattern, yes, no] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"^(ab*){2,65}$", "aba", "b"}, {"^(a*){2,65}$", "", "b"}, {"^(a+){2,3}$", "aaaaa", "a"},
           {"^(a+)?$", "aaa", "b"}, {"^(a?)+$", "aa", "b"}, {"^(a{2})*$", "aaaa", "aaa"}}) {
    EXPECT_TRUE(sw::Pattern(pattern).search(yes)) << pattern;
    EXPECT_FALSE(sw::Pattern(pattern).search(no)) << pattern;
  }
}

}  // namespace

namespace {

// fuzz_call_output: an argument whose key holds "</tool_call>" cut the block there; a block's
// JSON now ends where its value ends, in every tagged format.
TEST(FuzzFindings, AnArgumentHoldingTheClosingTagStaysInItsCall) {
  const std::string text = finding("output-argument-holds-the-closing-tag.txt");
  for (const char* name : {"hermes", "smollm2"}) {
    const sw::CallFormat format = sw::CallFormat::by_name(name);
    const std::vector<sw::ToolCall> calls = format.parse(text);
    ASSERT_EQ(calls.size(), 1u) << name;
    EXPECT_EQ(format.parse(format.calls_text(calls)), calls) << name;
  }
  const sw::ToolCall code{"run", sw::Json::parse(R"j({"source": "print('</tool_call>')"})j")};
  const sw::CallFormat hermes = sw::CallFormat::by_name("hermes");
  EXPECT_EQ(hermes.parse(hermes.calls_text({code, code})), (std::vector<sw::ToolCall>{code, code}));
}

// fuzz_call_output: a Gemma 4 string holding "<tool_call|>" - read from text without markers -
// was cut there when its call was written and read again. Calls that name their tool in markers
// are now read one after another, each to its own end, from the marker that opens the turn: a
// value may hold the markers, in Gemma 4's calls and in LFM2's.
TEST(FuzzFindings, AStringHoldingTheCallsEndStaysInItsCall) {
  const std::string text = finding("output-notation-string-holds-the-call-end.bin");
  const sw::CallFormat gemma4 = sw::CallFormat::gemma4_calls();
  const std::vector<sw::ToolCall> calls = gemma4.parse(text);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(gemma4.parse(gemma4.calls_text(calls)), calls);
  const sw::ToolCall code{"run", sw::Json::parse(R"j({"source": "print(']<|tool_call_end|>}<tool_call|>')"})j")};
  for (const sw::CallFormat& format : {gemma4, sw::CallFormat::python_like_calls()})
    EXPECT_EQ(format.parse("Sure. " + format.calls_text({code, code})), (std::vector<sw::ToolCall>{code, code}));
}

}  // namespace
