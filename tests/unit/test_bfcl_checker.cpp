// BFCL's AST checker rules, on real cases taken from the BFCL v4 files.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "bfcl/bfcl.h"

namespace {

const std::vector<sw::bfcl::Case>& all_cases() {
  static const auto cases = sw::bfcl::load_standard_categories(SW_TEST_BFCL, sw::bfcl::standard_categories());
  return cases;
}

const sw::bfcl::Case& find_case(const std::string& id) {
  for (const auto& c : all_cases()) {
    if (c.id == id) return c;
  }
  throw std::runtime_error("no BFCL case " + id);
}

sw::ToolCall call(const char* name, const char* arguments) { return {name, sw::Json::parse(arguments)}; }

bool valid(const char* id, std::vector<sw::ToolCall> calls) { return sw::bfcl::check(find_case(id), calls).valid; }

TEST(BfclData, LoadsTheSixCategories) {
  std::map<std::string, int> per_category;
  for (const auto& c : all_cases()) per_category[c.category]++;
  EXPECT_EQ(per_category["simple_python"], 400);
  EXPECT_EQ(per_category["multiple"], 200);
  EXPECT_EQ(per_category["parallel"], 200);
  EXPECT_EQ(per_category["parallel_multiple"], 200);
  EXPECT_EQ(per_category["live_simple"], 258);
  EXPECT_EQ(per_category["live_multiple"], 1053);
}

TEST(BfclChecker, SimplePython0) {
  // ground truth: calculate_triangle_area(base=[10], height=[5], unit=["units", ""])
  EXPECT_TRUE(valid("simple_python_0", {call("calculate_triangle_area", R"({"base": 10, "height": 5})")}));
  EXPECT_TRUE(valid("simple_python_0", {call("calculate_triangle_area", R"({"base": 10, "height": 5, "unit": "Units"})")}));
  EXPECT_FALSE(valid("simple_python_0", {call("calculate_triangle_area", R"({"base": 10, "height": 6})")}));
  EXPECT_FALSE(valid("simple_python_0", {call("calculate_triangle_area", R"({"base": 10})")}));  // missing required
  EXPECT_FALSE(valid("simple_python_0", {call("calculate_triangle_area", R"({"base": 10, "height": 5, "color": "red"})")}));
  EXPECT_FALSE(valid("simple_python_0", {call("calculate_triangle_area", R"({"base": "10", "height": 5})")}));  // type
  EXPECT_FALSE(valid("simple_python_0", {call("calculate_triangle_area", R"({"base": 10.0, "height": 5})")}));  // float for int
  EXPECT_FALSE(valid("simple_python_0", {call("triangle_area", R"({"base": 10, "height": 5})")}));
  EXPECT_FALSE(valid("simple_python_0", {}));
}

TEST(BfclChecker, IntAcceptedForFloat) {
  // live_simple_2-2-0: uber.ride(loc=[...], type=["comfort"], time=[600]); find a float case too.
  const auto& c = find_case("parallel_2");  // calculate_resistance(length=[5], area=[0.01], ...)
  std::vector<sw::ToolCall> calls = {
      call("calculate_resistance", R"({"length": 5, "area": 0.01, "resistivity": "copper"})"),
      call("calculate_resistance", R"({"length": 5, "area": 0.01, "resistivity": "aluminum"})")};
  EXPECT_TRUE(sw::bfcl::check(c, calls).valid) << sw::bfcl::check(c, calls).error;
}

TEST(BfclChecker, ParallelInAnyOrderButRightCount) {
  // parallel_0: spotify.play(Taylor Swift, 20) and spotify.play(Maroon 5, 15)
  auto swift = call("spotify.play", R"({"artist": "Taylor Swift", "duration": 20})");
  auto maroon = call("spotify.play", R"({"artist": "Maroon 5", "duration": 15})");
  EXPECT_TRUE(valid("parallel_0", {swift, maroon}));
  EXPECT_TRUE(valid("parallel_0", {maroon, swift}));
  EXPECT_FALSE(valid("parallel_0", {swift}));
  EXPECT_FALSE(valid("parallel_0", {swift, swift}));
}

TEST(BfclChecker, StringsAreNormalised) {
  // live_simple_1-1-0: github_star(repos=["ShishirPatil/gorilla,gorilla-llm/gorilla-cli"], aligned=[true])
  EXPECT_TRUE(valid("live_simple_1-1-0",
                    {call("github_star", R"({"repos": "shishirpatil/gorilla, gorilla-llm/gorilla-cli", "aligned": true})")}));
  EXPECT_FALSE(valid("live_simple_1-1-0", {call("github_star", R"({"repos": "ShishirPatil/gorilla", "aligned": true})")}));
  EXPECT_FALSE(valid("live_simple_1-1-0",
                     {call("github_star", R"({"repos": "ShishirPatil/gorilla,gorilla-llm/gorilla-cli", "aligned": "true"})")}));
}

TEST(BfclSampler, EvenOverArgumentCountsAndDeterministic) {
  auto sample = sw::bfcl::sample_by_argument_count(all_cases(), 100, 1);
  ASSERT_EQ(sample.size(), 100u);
  std::map<int, int> buckets;
  for (const auto& c : sample) buckets[std::clamp(c.argument_count, 1, 4)]++;
  for (int b = 1; b <= 4; ++b) EXPECT_EQ(buckets[b], 25) << "bucket " << b;
  auto again = sw::bfcl::sample_by_argument_count(all_cases(), 100, 1);
  for (size_t i = 0; i < sample.size(); ++i) EXPECT_EQ(sample[i].id, again[i].id);
}

TEST(BfclData, MalformedFileNamesFileAndLine) {
  try {
    sw::bfcl::load_cases(SW_TEST_DATA "/malformed.json", SW_TEST_DATA "/malformed.json");
    ADD_FAILURE() << "no error";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("malformed.json:1"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// Inputs the fuzz target fuzz_bfcl found (tests/data/fuzz): each once crashed the checker.
sw::bfcl::Case fuzz_case(const std::string& file) {
  std::ifstream in(std::string(SW_TEST_DATA) + "/fuzz/" + file);
  const sw::Json input = sw::Json::parse(in);
  sw::bfcl::Case c;
  c.id = file;
  c.functions = input["function"];
  c.ground_truth = input["ground_truth"];
  return c;
}

TEST(BfclForms, AFunctionWithoutParametersIsCheckedNotReadPast) {
  const sw::bfcl::Case c = fuzz_case("bfcl-function-without-parameters.json");
  sw::bfcl::check_forms(c);
  // The doc declares no parameters (its key is misspelt), so every argument is unexpected.
  const sw::bfcl::Verdict v = sw::bfcl::check(c, {{"solve_quadratic_equation", sw::Json::parse(R"({"a": 2})")}});
  EXPECT_FALSE(v.valid);
  EXPECT_NE(v.error.find("Unexpected parameter"), std::string::npos) << v.error;
}

TEST(BfclForms, CasesOfOtherFormsAreRefusedNamingTheCase) {
  const char* malformed[][2] = {
      {R"([{"name": "f"}])", R"([{}])"},
      {R"([{"name": "f"}])", R"([{"f": {"a": 1}}])"},
      {R"([{"name": 5}])", R"([])"},
      {R"([{"name": "f", "parameters": {"properties": {"a": 3}}}])", R"([])"},
      {R"({"name": "f"})", R"([])"},
  };
  for (const auto& [functions, truth] : malformed) {
    sw::bfcl::Case c;
    c.id = "x_1";
    c.functions = sw::Json::parse(functions);
    c.ground_truth = sw::Json::parse(truth);
    try {
      sw::bfcl::check_forms(c);
      ADD_FAILURE() << functions << " " << truth << " was accepted";
    } catch (const sw::Error& e) {
      EXPECT_NE(std::string(e.what()).find("BFCL case x_1"), std::string::npos) << e.what();
    }
  }
}

// The function docs as OpenAI tools: python type names become JSON Schema's, at every depth.
TEST(BfclOpenAiTools, PythonTypeNamesBecomeJsonSchemaTypes) {
  const sw::Json functions = sw::Json::parse(R"([{"name": "f.g", "description": "d", "parameters": {
      "type": "dict", "required": ["a"], "properties": {
        "a": {"type": "float"}, "b": {"type": "tuple", "items": {"type": "dict", "properties": {"c": {"type": "any"}}}},
        "d": {"type": "integer", "enum": [1, 2]}}}}])");
  const sw::Json tools = sw::bfcl::openai_tools(functions);
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0]["type"], "function");
  const sw::Json& function = tools[0]["function"];
  EXPECT_EQ(function["name"], "f.g");
  EXPECT_EQ(function["description"], "d");
  const sw::Json& parameters = function["parameters"];
  EXPECT_EQ(parameters["type"], "object");
  EXPECT_EQ(parameters["required"], sw::Json::parse(R"(["a"])"));
  EXPECT_EQ(parameters["properties"]["a"]["type"], "number");
  EXPECT_EQ(parameters["properties"]["b"]["type"], "array");
  EXPECT_EQ(parameters["properties"]["b"]["items"]["type"], "object");
  EXPECT_FALSE(parameters["properties"]["b"]["items"]["properties"]["c"].contains("type"));
  EXPECT_EQ(parameters["properties"]["d"], sw::Json::parse(R"({"type": "integer", "enum": [1, 2]})"));
  // Every sampled case's tools read as tools by the engine's own parser too.
  for (const auto& c : sw::bfcl::sample_by_argument_count(all_cases(), 100, 1))
    EXPECT_NO_THROW(sw::parse_tools(sw::bfcl::openai_tools(c.functions))) << c.id;
}

}  // namespace
