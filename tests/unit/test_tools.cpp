// Tool definitions in three dialects -> ToolSpec, and the errors for what is not supported.
#include <gtest/gtest.h>

#include "schemaweaver/tools.h"
#include "testing.h"

namespace {

sw::Json parse(const char* text) { return sw::Json::parse(text); }

TEST(Tools, OpenAiDialect) {
  auto tools = sw::parse_tools(parse(R"([{"type": "function", "function": {"name": "f", "description": "d",
      "parameters": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
      "required": ["b"]}}}])"));
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0].name, "f");
  ASSERT_EQ(tools[0].arguments.size(), 2u);
  EXPECT_EQ(tools[0].arguments[0].name, "a");
  EXPECT_FALSE(tools[0].arguments[0].required);
  EXPECT_EQ(tools[0].arguments[1].schema.type, sw::Type::Integer);
  EXPECT_TRUE(tools[0].arguments[1].required);
  EXPECT_FALSE(tools[0].read_only);
}

TEST(Tools, McpDialectWithReadOnlyHint) {
  auto tools = sw::parse_tools(parse(R"({"name": "now", "inputSchema": {"type": "object",
      "properties": {"tz": {"type": "string"}}, "required": ["tz"]}, "annotations": {"readOnlyHint": true}})"));
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_TRUE(tools[0].read_only);
  EXPECT_TRUE(tools[0].arguments[0].required);
}

TEST(Tools, BfclPythonTypeNames) {
  auto tools = sw::parse_tools(parse(R"([{"name": "m.f", "parameters": {"type": "dict", "properties": {
      "x": {"type": "float"}, "t": {"type": "tuple", "items": {"type": "integer"}},
      "d": {"type": "dict", "properties": {"k": {"type": "boolean"}}},
      "any": {"type": "any"}, "opt": {"type": "string", "default": "none"}}, "required": ["x"]}}])"));
  const auto& args = tools[0].arguments;
  EXPECT_EQ(args[0].schema.type, sw::Type::Number);
  EXPECT_EQ(args[1].schema.type, sw::Type::Array);
  ASSERT_TRUE(args[1].schema.items);
  EXPECT_EQ(args[1].schema.items->type, sw::Type::Integer);
  EXPECT_EQ(args[2].schema.type, sw::Type::Object);
  EXPECT_EQ(args[2].schema.properties.at(0).schema.type, sw::Type::Boolean);
  EXPECT_EQ(args[3].schema.type, sw::Type::Any);
  EXPECT_EQ(args[4].schema.default_value, sw::Json("none"));
}

TEST(Tools, NullableAndAnyOf) {
  auto tools = sw::parse_tools(parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "a": {"type": ["string", "null"]}, "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
      "c": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}}])"));
  const auto& args = tools[0].arguments;
  EXPECT_EQ(args[0].schema.type, sw::Type::String);
  EXPECT_TRUE(args[0].schema.nullable);
  EXPECT_EQ(args[1].schema.type, sw::Type::Integer);
  EXPECT_TRUE(args[1].schema.nullable);
  EXPECT_EQ(args[2].schema.any_of.size(), 2u);
}

TEST(Tools, ErrorsNameToolAndPath) {
  struct Case { const char* json; const char* message; };
  const Case cases[] = {
      {R"([])", "tool list is empty"},
      {R"(42)", "expected a JSON array"},
      {R"([{"description": "x"}])", "missing 'name'"},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {"z": {"type": "complex"}}}}])",
       "tool 'f': parameters.properties.z.type: unsupported type 'complex'"},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {"z": {"allOf": []}}}}])",
       "tool 'f': parameters.properties.z.allOf: must be a non-empty list of schemas"},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {"z": {"not": {}}}}}])",
       "tool 'f': parameters.properties.z.not: 'not' is not supported"},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {}, "required": ["q"]}}])",
       "'q' is required but not declared"},
      {R"([{"name": "f"}, {"name": "f"}])", "duplicate tool name 'f'"},
      {R"([{"name": "f", "parameters": {"type": "string"}}])", "must describe an object"},
      {R"([{"name": "f", "parameters": {"type": "object", "properties": {"e": {"enum": []}}}}])",
       "parameters.properties.e.enum: must be a non-empty list"},
  };
  for (const Case& c : cases) {
    try {
      sw::parse_tools(parse(c.json));
      ADD_FAILURE() << "no error for " << c.json;
    } catch (const sw::Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

TEST(Tools, EveryKeywordIsStructureValueOrAnnotation) {
  auto tools = sw::parse_tools(parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "n": {"type": "integer", "minimum": 1, "maximum": 10, "title": "N", "x-ui": "slider"},
      "s": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5, "examples": ["ab"]}}}}])"));
  EXPECT_EQ(tools[0].arguments[0].schema.checks, parse(R"({"minimum": 1, "maximum": 10})"));
  EXPECT_EQ(tools[0].arguments[1].schema.checks, parse(R"({"pattern": "^[a-z]+$", "maxLength": 5})"));
  EXPECT_THROW(sw::parse_tools(parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "n": {"type": "integer", "dependentRequired": {}}}}}])")), sw::Error);
}

TEST(Tools, SchemaViolationsNameTheArgument) {
  auto tools = sw::parse_tools(parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
      "n": {"type": "integer", "minimum": 1, "maximum": 10},
      "s": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
      "e": {"type": "string", "enum": ["a", "b"]},
      "l": {"type": "array", "items": {"type": "number"}, "maxItems": 2},
      "o": {"type": ["object", "null"], "properties": {"k": {"type": "boolean"}}, "required": ["k"]}},
      "required": ["n"]}}])"));
  struct Case { const char* name; const char* args; const char* why; };
  const Case cases[] = {
      {"f", R"({"n": 5})", ""},
      {"f", R"({"n": 5, "s": "abc", "e": "b", "l": [1, 2.5], "o": {"k": true}})", ""},
      {"f", R"({"n": 5, "o": null})", ""},
      {"g", R"({})", "unknown tool 'g'"},
      {"f", R"({})", "f: missing required argument 'n'"},
      {"f", R"({"n": 5, "z": 1})", "f: unknown argument 'z'"},
      {"f", R"({"n": 11})", "f.n: 11 violates maximum 10"},
      {"f", R"({"n": 2.5})", "f.n: 2.5 has the wrong type"},
      {"f", R"({"n": 1, "s": "ABC"})", "f.s: \"ABC\" violates pattern"},
      {"f", R"({"n": 1, "s": "abcdef"})", "violates maxLength 5"},
      {"f", R"({"n": 1, "e": "c"})", "f.e: \"c\" is not one of [\"a\", \"b\"]"},
      {"f", R"({"n": 1, "l": [1, "x"]})", "f.l[1]: \"x\" has the wrong type"},
      {"f", R"({"n": 1, "l": [1, 2, 3]})", "violates maxItems 2"},
      {"f", R"({"n": 1, "o": {}})", "f.o: missing required argument 'k'"},
  };
  for (const Case& c : cases) {
    std::string why = sw::schema_violation(tools, {c.name, parse(c.args)});
    if (std::string(c.why).empty()) EXPECT_EQ(why, "") << c.args;
    else EXPECT_NE(why.find(c.why), std::string::npos) << c.args << " -> " << why;
  }
}

TEST(Tools, OpenAiRoundTripUsesStandardTypes) {
  auto tools = sw::parse_tools(parse(R"([{"name": "f", "parameters": {"type": "dict", "properties": {
      "x": {"type": "float", "description": "a number"}}, "required": ["x"]}}])"));
  EXPECT_EQ(sw::dump_json(tools[0].to_openai()),
            R"({"type": "function", "function": {"name": "f", "description": "", "parameters": )"
            R"({"type": "object", "properties": {"x": {"type": "number", "description": "a number"}}, "required": ["x"]}}})");
}

TEST(Tools, DumpJsonInPythonStyle) {
  EXPECT_EQ(sw::dump_json(parse(R"({"a":[1,2.5,"é"],"b":{"c":null}})")),
            R"({"a": [1, 2.5, "é"], "b": {"c": null}})");
}

}  // namespace

// A root that declares no properties takes any keys (json_object is {"type": "object"}): one
// value, decoded under a free-form object's grammar and checked as one; its values typed by
// additionalProperties where it gives a schema.
TEST(ResponseSchema, AFreeFormRootTakesAnyKeys) {
  const sw::ToolSpec any = sw::parse_response_schema(sw::Json::parse(R"({"type": "object"})"), "json_object");
  ASSERT_TRUE(any.free_form_arguments);
  EXPECT_TRUE(any.arguments.empty());
  EXPECT_EQ(any.to_openai()["function"]["parameters"], sw::Json::parse(R"({"type": "object"})"));
  const sw::ToolSpec counts = sw::parse_response_schema(
      sw::Json::parse(R"({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}})"), "counts");
  ASSERT_TRUE(counts.free_form_arguments && counts.free_form_arguments->items);
  EXPECT_TRUE(sw::parse_response_schema(sw::Json::parse("{}")).free_form_arguments);  // untyped: an object

  const sw::CallFormat format = sw::CallFormat::schema_answer();
  auto grammar = sw::build_call_grammar(format, {counts}, 1);
  auto accepts = [&](const std::string& text) {
    sw::Matcher m(grammar);
    return m.advance(text) && m.can_end();
  };
  EXPECT_TRUE(accepts(R"({})"));
  EXPECT_TRUE(accepts(R"({"apples": 3, "pears": 0})"));
  EXPECT_FALSE(accepts(R"({"apples": -3})"));
  EXPECT_FALSE(accepts(R"({"apples": "3"})"));
  EXPECT_FALSE(accepts(R"([1])"));
  auto tail = sw::build_tail_grammar("", format, {}, sw::Members::NoneYet, sw::NextCall::Forbidden,
                                     counts.free_form_arguments.get());
  sw::Matcher m(tail);
  EXPECT_TRUE(m.advance(R"({"a": 1, "b": 2})") && m.can_end()) << "the serial reference writes the whole object";
  EXPECT_EQ(sw::schema_violation({counts}, {"counts", sw::Json::parse(R"({"a": 1})")}), "");
  EXPECT_NE(sw::schema_violation({counts}, {"counts", sw::Json::parse(R"({"a": "x"})")}), "");
  EXPECT_EQ(sw::schema_violation({any}, {"json_object", sw::Json::parse(R"({"a": [1, {"b": null}]})")}), "");
}

// A response schema (structured outputs) read as the one tool of its answers.
TEST(ResponseSchema, RootObjectPropertiesBecomeTheArguments) {
  sw::ToolSpec answer = sw::parse_response_schema(sw::Json::parse(R"({"type": "object", "description": "A person.",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]})"), "person");
  EXPECT_EQ(answer.name, "person");
  EXPECT_EQ(answer.description, "A person.");
  ASSERT_EQ(answer.arguments.size(), 2u);
  EXPECT_TRUE(answer.arguments[0].required);
  EXPECT_FALSE(answer.arguments[1].required);

  auto refusal = [](const char* schema, const std::string& name = "response") {
    try {
      sw::parse_response_schema(sw::Json::parse(schema), name);
    } catch (const sw::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal(R"({"type": "array", "items": {"type": "string"}})").find("response schema 'response'"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "additionalProperties": false})").find("its one value is {}"), std::string::npos);
  EXPECT_NE(refusal(R"({"anyOf": [{"type": "object"}, {"type": "string"}]})").find("not anyOf"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": {"type": "string", "not": {}}}})").find("properties.a.not"),
            std::string::npos);
  EXPECT_NE(refusal(R"([1])").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": {}}})", "a b").find("'a b'"), std::string::npos);
}
