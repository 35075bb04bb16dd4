// Calls told as they are decided: every prefix of a call's text fixes a prefix of its final
// arguments' dump, and the pieces joined are that dump.
#include <gtest/gtest.h>

#include "testing.h"

namespace {

// Every prefix of `text` fixes a prefix of dump_json(parse(text)), never shorter than an
// earlier prefix's, and the whole text fixes all of it.
void expect_prefixes_fix_the_dump(const std::string& text) {
  const std::string dumped = sw::dump_json(sw::Json::parse(text));
  std::string longest;
  for (size_t n = 0; n <= text.size(); ++n) {
    size_t end;
    const std::string fixed = sw::fixed_dump_prefix(text.substr(0, n), end);
    ASSERT_EQ(dumped.compare(0, fixed.size(), fixed), 0) << "prefix " << n << " of " << text << " fixed " << fixed;
    if (fixed.size() > longest.size()) longest = fixed;
    EXPECT_EQ(end == std::string::npos, n < text.size()) << n;
  }
  EXPECT_EQ(longest, dumped);
}

TEST(CallDeltas, EveryPrefixFixesAPrefixOfTheDump) {
  expect_prefixes_fix_the_dump(R"({"location": "Paris, France", "unit": "celsius"})");
  expect_prefixes_fix_the_dump(R"({"n": 12, "x": -1.50e2, "ok": true, "none": null})");
  expect_prefixes_fix_the_dump(R"({"a": {"b": [1, 2, {"c": "d"}], "e": []}, "f": {}})");
  // Escapes decoded and written as dump_json writes them; a surrogate pair waits for its half.
  expect_prefixes_fix_the_dump(R"({"q": "say \"hi\"\n\u00e9 \ud83d\ude00 \/ \\"})");
  // Raw multi-byte characters, cut only whole.
  expect_prefixes_fix_the_dump("{\"city\": \"Z\xC3\xBCrich \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x98\x80\"}");
  expect_prefixes_fix_the_dump(R"({ "spaced" :  [ 1 ,2 ] , "k":"v" })");
}

TEST(CallDeltas, WhatAPrefixFixes) {
  size_t end;
  EXPECT_EQ(sw::fixed_dump_prefix("", end), "");
  EXPECT_EQ(sw::fixed_dump_prefix("{", end), "{");
  EXPECT_EQ(sw::fixed_dump_prefix(R"({"loc)", end), "{");           // a key is told with its value
  EXPECT_EQ(sw::fixed_dump_prefix(R"({"loc": "Par)", end), R"({"loc": "Par)");
  EXPECT_EQ(sw::fixed_dump_prefix(R"({"n": 12)", end), "{");         // 12 may go on: 123
  EXPECT_EQ(sw::fixed_dump_prefix(R"({"n": 12,)", end), R"({"n": 12)");
  EXPECT_EQ(sw::fixed_dump_prefix(R"({"q": "a\)", end), R"({"q": "a)");  // half an escape
  EXPECT_EQ(sw::fixed_dump_prefix(R"({"q": "\u00)", end), R"({"q": ")");
  EXPECT_EQ(end, std::string::npos);
  EXPECT_EQ(sw::fixed_dump_prefix(R"({"n": 1.50} and more)", end), R"({"n": 1.5})");
  EXPECT_EQ(end, 11u);
}

struct Told {
  std::vector<sw::CallDelta> deltas;
  std::map<int, std::string> names, arguments;
};

Told tell(const sw::CallFormat& format, const std::string& text, size_t piece) {
  Told told;
  sw::CallDeltas deltas(format, [&](const sw::CallDelta& d) {
    told.deltas.push_back(d);
    if (!d.name.empty()) told.names[d.index] += d.name;
    told.arguments[d.index] += d.arguments;
  });
  for (size_t i = 0; i < text.size(); i += piece) deltas.feed(text.substr(i, piece));
  return told;
}

TEST(CallDeltas, TellsEachCallOfATurnByPieces) {
  const sw::CallFormat hermes = sw::CallFormat::by_name("hermes");
  ASSERT_TRUE(sw::CallDeltas::streams(hermes));
  const std::vector<sw::ToolCall> calls{{"get_weather", {{"location", "Paris"}, {"days", 3}}},
                                        {"get_time", {{"zone", "Europe/Paris"}}}};
  const std::string text = hermes.calls_text(calls);
  for (size_t piece : {1, 3, 1000}) {
    const Told told = tell(hermes, text, piece);
    ASSERT_EQ(told.names.size(), 2u) << text;
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(told.names.at(i), calls[size_t(i)].name);
      EXPECT_EQ(told.arguments.at(i), sw::dump_json(calls[size_t(i)].arguments)) << piece;
    }
    // Byte by byte, the arguments come in many pieces, the name first.
    if (piece == 1) EXPECT_GT(told.deltas.size(), 10u);
    EXPECT_EQ(told.deltas.front().name, "get_weather");
  }
}

TEST(CallDeltas, TheListFormTooButNotAnAnswerInASchema) {
  const sw::CallFormat list = sw::CallFormat::by_name("smollm2");
  const std::vector<sw::ToolCall> calls{{"a", {{"x", 1}}}, {"b", sw::Json::object()}};
  const Told told = tell(list, list.calls_text(calls), 2);
  EXPECT_EQ(told.arguments.at(0), R"({"x": 1})");
  EXPECT_EQ(told.arguments.at(1), "{}");
  EXPECT_FALSE(sw::CallDeltas::streams(sw::CallFormat::schema_answer()));
}

}  // namespace
