// JSON Schema patterns: the supported subset matches as ECMA-262 search does, in linear time,
// and what it lacks is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "schemaweaver/tools.h"
#include "testing.h"

namespace {

struct Case {
  const char* pattern;
  const char* text;
  bool matches;
};

TEST(Pattern, MatchesAsASearch) {
  const Case cases[] = {
      {"abc", "xxabcxx", true},         {"^abc", "xxabc", false},          {"^abc$", "abc", true},
      {"^abc$", "abcd", false},         {"a|b", "zzb", true},              {"^(ab)+$", "ababab", true},
      {"^(ab)+$", "ababa", false},      {"^a{2,3}$", "aaa", true},         {"^a{2,3}$", "aaaa", false},
      {"^a{2}$", "aa", true},           {"^a{2,}$", "aaaaaa", true},       {"^a?b*$", "bbb", true},
      {"^[a-z]+$", "hello", true},      {"^[a-z]+$", "Hello", false},      {"^[^0-9]+$", "abc", true},
      {"^[^0-9]+$", "ab1", false},      {"^\\d{3}-\\d{4}$", "555-1234", true},
      {"^\\w+@\\w+\\.com$", "a_b@c.com", true},                           {"^\\S+$", "a b", false},
      {"^.$", "\xc3\xa9", true},        {"^.{2}$", "\xc3\xa9t", true},      {"^caf\xc3\xa9$", "caf\xc3\xa9", true},
      {"^\\u00e9$", "\xc3\xa9", true},  {"^[-+]?\\d+(\\.\\d+)?$", "-3.25", true},
      {"^(?:x|y)+$", "xyx", true},      {"^(?<name>ab)c$", "abc", true},     {"^a+?$", "aaa", true},
      {"^$", "", true},                 {"x*", "", true},                  {"^(a*)*$", "aaaa", true},
      {"^[\\]]$", "]", true},           {"^a\\.b$", "a.b", true},           {"^a\\.b$", "axb", false},
      {"^[A-Z]{2}[0-9]{2}$", "AB12", true},
  };
  for (const Case& c : cases) EXPECT_EQ(sw::Pattern(c.pattern).search(c.text), c.matches) << c.pattern << " on " << c.text;
}

// The fastest of three runs of `work`, in seconds: what another process's load added drops out.
double fastest_seconds(const std::function<void()>& work) {
  double fastest = 1e30;
  for (int run = 0; run < 3; ++run) {
    const auto started = std::chrono::steady_clock::now();
    work();
    fastest = std::min(fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  return fastest;
}

// A backtracking matcher takes exponential time here (std::regex ran for minutes); the automaton
// takes about what the plainest pattern takes on the same text (measured here: at most 2.1x), so
// the bound is that reference's time on this machine, not a number of seconds.
TEST(Pattern, NestedQuantifiersTakeLinearTime) {
  const std::string text = std::string(20000, 'a') + "c";
  const double reference = fastest_seconds([&] { EXPECT_TRUE(sw::Pattern("^a+c$").search(text)); });
  const double nested = fastest_seconds([&] {
    EXPECT_FALSE(sw::Pattern("^(a+)+b$").search(text));
    EXPECT_FALSE(sw::Pattern("^(a|aa)*b$").search(text));
    EXPECT_TRUE(sw::Pattern("^(a+)+c$").search(text));
  });
  EXPECT_LT(nested, 20 * reference) << nested << " s against " << reference << " s for ^a+c$";
}

TEST(Pattern, RefusesWhatTheSubsetLacksByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"(?=a)b", "lookaround"},          {"(a)\\1", "backreferences"},     {"\\bword", "word boundaries"},
      {"[\xc3\xa9]", "beyond ASCII"},    {"\\p{L}", "Unicode property"},   {"(ab", "not closed"},
      {"ab)", "unbalanced"},             {"[ab", "not closed"},            {"*a", "nothing to repeat"},
      {"a{3,2}", "below its minimum"},   {"a{5000}", "above 1000"},        {"^*", "anchor cannot be repeated"},
  };
  for (const auto& [pattern, why] : cases) {
    try {
      sw::Pattern p(pattern);
      ADD_FAILURE() << pattern << " was accepted";
    } catch (const sw::Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << pattern << ": " << e.what();
    }
  }
}

// A keyword whose value is of the wrong kind would be skipped by the check; it is refused.
TEST(Tools, KeywordValuesOfTheWrongKindAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {R"j({"type": "string", "pattern": 123})j", "pattern: must be a string"},
      {R"j({"type": "string", "pattern": "(?!x)"})j", "lookaround"},
      {R"j({"type": "string", "minLength": -1})j", "minLength: must be a non-negative integer"},
      {R"j({"type": "integer", "minimum": "10"})j", "minimum: must be a number"},
      {R"j({"type": "string", "format": 7})j", "format: must be a string"},
      {R"j({"type": "array", "items": {"type": "string"}, "uniqueItems": "yes"})j", "uniqueItems: must be true or false"},
  };
  for (const auto& [schema, why] : cases) {
    std::string tools = R"([{"name": "f", "parameters": {"type": "object", "properties": {"x": )" + std::string(schema) + "}}}]";
    try {
      sw::parse_tools(sw::Json::parse(tools));
      ADD_FAILURE() << schema << " was accepted";
    } catch (const sw::Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << schema << ": " << e.what();
    }
  }
}

}  // namespace
