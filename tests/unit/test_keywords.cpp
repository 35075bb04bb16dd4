// Every JSON Schema keyword is either enforced while decoding or refused when the tools are read
// (an annotation changes no value). Each row below is one keyword: the schema of an argument
// `v`, texts its value grammar must accept (they also pass the finished-call check) and texts
// it must reject - or, for a refused keyword, the error it gets. docs/json-schema.md's keyword table is
// this list, printed; a test keeps the two the same.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "schemaweaver/tools.h"
#include "testing.h"

namespace {

enum class How { Enforced, Refused, Annotation };

struct Row {
  const char* keyword;
  How how;
  const char* schema;                // of argument v (or, with "$defs", with them beside)
  std::vector<const char*> accepted;  // value texts the grammar writes
  std::vector<const char*> rejected;  // value texts it cannot write
  const char* error = "";             // Refused: part of the message
};

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      {"type", How::Enforced, R"({"type": "integer"})", {"0", "-12"}, {"1.5", "\"1\"", "01"}},
      {"enum", How::Enforced, R"({"type": "string", "enum": ["a", "b"]})", {"\"a\""}, {"\"c\""}},
      {"enum contradicting type", How::Refused, R"({"type": "integer", "enum": ["a"]})", {}, {},
       "no value listed fits"},
      {"const", How::Enforced, R"({"const": 3})", {"3"}, {"4"}},
      {"minLength", How::Enforced, R"({"type": "string", "minLength": 2})", {"\"ab\"", "\"éé\""}, {"\"\"", "\"a\"", "\"é\""}},
      {"maxLength", How::Enforced, R"({"type": "string", "maxLength": 2})", {"\"\"", "\"é\\n\""}, {"\"abc\""}},
      {"pattern", How::Enforced, R"({"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"})", {"\"AB-12\""},
       {"\"ab-12\"", "\"AB-\"", "\"AB-1x\""}},
      {"pattern (searched, not anchored)", How::Enforced, R"({"type": "string", "pattern": "b+c"})",
       {"\"abbcd\"", "\"bc\""}, {"\"acb\"", "\"\""}},
      {"pattern with maxLength", How::Enforced, R"({"type": "string", "pattern": "^a+$", "maxLength": 3})",
       {"\"aaa\""}, {"\"aaaa\"", "\"\""}},
      {"pattern with lookaround", How::Refused, R"j({"type": "string", "pattern": "^(?!x)"})j", {}, {}, "lookaround"},
      {"format date", How::Enforced, R"({"type": "string", "format": "date"})", {"\"2024-02-29\"", "\"1999-12-31\""},
       {"\"2023-02-29\"", "\"2024-13-01\"", "\"2024-1-01\""}},
      {"format time", How::Enforced, R"({"type": "string", "format": "time"})", {"\"23:59:59Z\"", "\"08:00:00.5+02:00\""},
       {"\"24:00:00Z\"", "\"08:00:00\""}},
      {"format date-time", How::Enforced, R"({"type": "string", "format": "date-time"})",
       {"\"2024-01-31T12:30:00Z\""}, {"\"2024-01-31 12:30:00Z\"", "\"2024-04-31T12:30:00Z\""}},
      {"format uuid", How::Enforced, R"({"type": "string", "format": "uuid"})",
       {"\"123e4567-e89b-12d3-a456-426614174000\""}, {"\"123e4567e89b12d3a456426614174000\""}},
      {"format email", How::Enforced, R"({"type": "string", "format": "email"})", {"\"ann@example.org\""},
       {"\"ann\"", "\"ann@org\""}},
      {"format ipv4", How::Enforced, R"({"type": "string", "format": "ipv4"})", {"\"192.168.0.1\""},
       {"\"256.1.1.1\"", "\"01.2.3.4\""}},
      {"format uri", How::Enforced, R"({"type": "string", "format": "uri"})", {"\"https://example.org/a?b=1#c\""},
       {"\"example org\"", "\"/relative\""}},
      {"format (others)", How::Refused, R"({"type": "string", "format": "hostname"})", {}, {}, "cannot be enforced"},
      {"minimum", How::Enforced, R"({"type": "integer", "minimum": 10})", {"10", "123"}, {"9", "-10"}},
      {"maximum", How::Enforced, R"({"type": "integer", "maximum": -5})", {"-5", "-100"}, {"-4", "0", "5"}},
      {"exclusiveMinimum", How::Enforced, R"({"type": "number", "exclusiveMinimum": 0})", {"0.5", "3", "0.01"},
       {"0", "0.0", "-1", "-0.5"}},
      {"exclusiveMaximum", How::Enforced, R"({"type": "number", "exclusiveMaximum": 1, "minimum": -2})",
       {"0.999", "-2", "-1.5"}, {"1", "1.0", "-2.5", "-3"}},
      {"minimum of a number, not whole", How::Refused, R"({"type": "number", "minimum": 0.5})", {}, {},
       "must be a whole number"},
      {"minItems, maxItems", How::Enforced,
       R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2})", {"[1]", "[1, 2]"},
       {"[]", "[1, 2, 3]"}},
      {"items", How::Enforced, R"({"type": "array", "items": {"type": "boolean"}})", {"[]", "[true, false]"}, {"[1]"}},
      {"prefixItems", How::Enforced,
       R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
       {"[\"a\", 1]"}, {"[1, \"a\"]", "[\"a\", 1, 2]"}},
      {"properties, required", How::Enforced,
       R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]})",
       {"{\"a\": 1}", "{\"a\": 1, \"b\": \"x\"}"}, {"{\"b\": \"x\"}", "{\"a\": \"1\"}"}},
      {"properties without type", How::Enforced, R"({"properties": {"a": {"type": "integer"}}, "required": ["a"]})",
       {"{\"a\": 1}"}, {"{}", "1"}},
      {"additionalProperties: false", How::Enforced, R"({"type": "object", "additionalProperties": false})",
       {"{}"}, {"{\"a\": 1}"}},
      {"additionalProperties (a schema)", How::Enforced,
       R"({"type": "object", "additionalProperties": {"type": "integer"}})", {"{\"x\": 1}"}, {"{\"x\": \"a\"}"}},
      {"anyOf", How::Enforced, R"({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 1}]})",
       {"3", "\"a\""}, {"-3", "\"ab\""}},
      {"oneOf (alternatives no value can both match: types, enums, a required discriminator)", How::Enforced,
       R"({"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}, "n": {"type": "integer"}},
                      "required": ["k", "n"]},
                     {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"]}, {"type": "string"}]})",
       {"{\"k\": \"a\", \"n\": 1}", "{\"k\": \"b\"}", "\"x\""}, {"{\"k\": \"c\"}", "1"}},
      {"oneOf (alternatives that may both match)", How::Refused,
       R"({"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 5}]})", {}, {}, "may both match a value"},
      {"type list, nullable", How::Enforced, R"({"type": ["string", "null"], "minLength": 1})", {"\"a\"", "null"},
       {"\"\"", "1"}},
      {"allOf (objects)", How::Enforced,
       R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                     {"type": "object", "properties": {"b": {"type": "string"}}}]})",
       {"{\"a\": 1, \"b\": \"x\"}"}, {"{\"b\": \"x\"}"}},
      {"$ref, $defs", How::Enforced, R"({"$ref": "#/$defs/Count", "$defs": {"Count": {"type": "integer", "minimum": 0}}})",
       {"0", "7"}, {"-1", "\"7\""}},
      {"$ref (recursive: unfolded 3 levels deep)", How::Enforced, R"({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object",
         "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}}, "required": ["v"]}}})",
       {"{\"v\": 1}", "{\"v\": 1, \"next\": {\"v\": 2, \"next\": {\"v\": 3}}}"},
       {"{\"v\": 1, \"next\": {\"v\": 2, \"next\": {\"v\": 3, \"next\": {\"v\": 4}}}}"}},
      {"$ref (recursive, needed at every level)", How::Refused, R"({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object",
         "properties": {"next": {"$ref": "#/$defs/Node"}}, "required": ["next"]}}})", {}, {}, "admits no value within 3 levels"},
      {"uniqueItems", How::Refused, R"({"type": "array", "uniqueItems": true})", {}, {}, "cannot be enforced"},
      {"multipleOf", How::Refused, R"({"type": "integer", "multipleOf": 5})", {}, {}, "cannot be enforced"},
      {"not, if/then/else, patternProperties, propertyNames, contains, min/maxProperties, dependentRequired",
       How::Refused, R"({"type": "object", "minProperties": 1})", {}, {}, "'minProperties' is not supported"},
      {"a value keyword without a type", How::Refused, R"({"minimum": 1})", {}, {}, "needs a 'type'"},
      {"description, title, default, examples, deprecated, readOnly, writeOnly, $comment, x-*", How::Annotation,
       R"({"type": "integer", "description": "d", "title": "t", "default": 1, "examples": [2]})", {"5"}, {"\"5\""}},
  };
  return table;
}

// The row's tool: one required argument v; "$defs" in a row's schema moves
// beside the parameters' properties (where "#/$defs/..." points).
std::vector<sw::ToolSpec> tool_of(const Row& row) {
  sw::Json v = sw::Json::parse(row.schema);
  sw::Json parameters = {{"type", "object"}, {"properties", {{"v", v}}}, {"required", {"v"}}};
  if (v.contains("$defs")) {
    parameters["$defs"] = v["$defs"];
    parameters["properties"]["v"].erase("$defs");
  }
  return sw::parse_tools(sw::Json::array({{{"name", "f"}, {"parameters", parameters}}}));
}

bool grammar_accepts(const sw::Schema& schema, const std::string& text) {
  sw::Matcher matcher(sw::build_value_grammar(schema));
  return matcher.advance(text) && matcher.can_end();
}

TEST(Keywords, EachIsEnforcedWhileDecodingOrRefused) {
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.keyword);
    if (row.how == How::Refused) {
      try {
        tool_of(row);
        ADD_FAILURE() << row.schema << " was accepted";
      } catch (const sw::Error& e) {
        EXPECT_NE(std::string(e.what()).find(row.error), std::string::npos) << e.what();
      }
      continue;
    }
    std::vector<sw::ToolSpec> tools = tool_of(row);
    const sw::Schema& schema = tools[0].arguments[0].schema;
    for (const char* text : row.accepted) {
      EXPECT_TRUE(grammar_accepts(schema, text)) << text;
      sw::ToolCall call{"f", {{"v", sw::Json::parse(text)}}};
      EXPECT_EQ(sw::schema_violation(tools, call), "") << text;
    }
    for (const char* text : row.rejected) EXPECT_FALSE(grammar_accepts(schema, text)) << text;
    // The whole call grammar enforces it too.
    sw::Matcher call(sw::build_call_grammar(sw::CallFormat::by_name("json"), tools));
    for (const char* text : row.rejected) {
      sw::Matcher copy = call;
      EXPECT_FALSE(copy.advance(std::string(R"({"name": "f", "arguments": {"v": )") + text + "}}") && copy.can_end())
          << text;
    }
  }
}

// The keyword table as docs/json-schema.md prints it.
std::string markdown_table() {
  std::string out = "| keyword | while decoding | example |\n|---|---|---|\n";
  for (const Row& row : rows()) {
    const char* how = row.how == How::Enforced ? "enforced" : row.how == How::Refused ? "refused" : "annotation (no effect)";
    std::string example = row.schema;
    for (size_t at; (at = example.find('\n')) != std::string::npos;) example.replace(at, example.find_first_not_of(' ', at + 1) - at, " ");
    for (size_t at = 0; (at = example.find('|', at)) != std::string::npos; at += 2) example.replace(at, 1, "\\|");
    out += std::string("| ") + row.keyword + " | " + how + " | `" + example + "` |\n";
  }
  return out;
}

TEST(Keywords, TheDocumentedTableIsThisList) {
  std::ifstream file(SW_KEYWORD_DOC);
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str(), begin = "<!-- keyword table: tests/unit/test_keywords.cpp -->\n",
                    end = "<!-- end of keyword table -->";
  const size_t from = doc.find(begin), to = doc.find(end);
  ASSERT_TRUE(from != std::string::npos && to != std::string::npos) << SW_KEYWORD_DOC " lacks the keyword table's markers";
  EXPECT_EQ(doc.substr(from + begin.size(), to - from - begin.size()), markdown_table())
      << SW_KEYWORD_DOC "'s keyword table differs; this is the table:\n" << markdown_table();
}

}  // namespace
