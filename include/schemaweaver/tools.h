// schemaweaver/tools.h - tool definitions and tool calls.
//
// A tool definition arrives in one of three dialects and is parsed into one typed ToolSpec:
//   OpenAI:  {"type": "function", "function": {"name", "description", "parameters": <schema>}}
//   MCP:     {"name", "description", "inputSchema": <schema>,
//            "annotations": {"readOnlyHint", "destructiveHint"}}
//   BFCL:    {"name", "description", "parameters": <schema with python type names>}
// Supported schema subset: string, integer, number, boolean, null, enum and const, array (items,
// tuples by prefixItems), object (properties, required, additionalProperties, or a free-form
// dict), anyOf/oneOf, allOf of objects, nullable types ("type": ["string", "null"]), local
// non-recursive $ref/$defs, and the value keywords minLength, maxLength, pattern, format (date,
// time, date-time, uuid, email, ipv4, uri), minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, minItems, maxItems - every one enforced by the grammars calls are decoded
// under. BFCL's python names (dict, float, tuple, list, any, int, str, bool) map onto these.
// Anything else (uniqueItems, multipleOf, not, if/then, recursive references...) raises
// sw::Error naming the tool, the JSON path and the keyword: nothing is silently ignored.
//
// Thread safety: all types here are plain values; parse_tools is reentrant.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schemaweaver/error.h"

namespace sw {

enum class Type { Any, String, Integer, Number, Boolean, Null, Array, Object };

struct Property;

// The schema of one JSON value.
struct Schema {
  Type type = Type::Any;
  bool nullable = false;                // null is accepted besides `type`
  std::vector<Json> enum_values;        // non-empty: the value is one of these (type ignored)
  std::shared_ptr<const Schema> items;  // Array: schema of every element (after the tuple's);
                                        // free-form Object: schema of every value (null: any)
  std::vector<Schema> prefix_items;     // Array: a tuple's elements by position
  bool closed_tuple = false;            // Array: no elements beyond the tuple's
  std::vector<Property> properties;     // Object: declared properties, in declared order
  bool free_form = false;               // Object without declared properties: any keys (false
                                        // and no properties: only {})
  std::vector<Schema> any_of;           // non-empty: the value matches one of these
  std::string description;
  std::optional<Json> default_value;
  // Value keywords as given (minimum, maxLength, pattern, format, ...): the grammars enforce
  // them while decoding, and the finished value is checked against them again.
  Json checks = Json::object();

  // JSON Schema (standard type names) for prompts and APIs.
  Json to_json() const;
};

struct Property {
  std::string name;
  Schema schema;
  bool required = false;
};

struct ToolSpec {
  std::string name;
  std::string description;
  std::vector<Property> arguments;  // required ones first is NOT implied: declared order
  bool read_only = false;           // MCP annotations.readOnlyHint
  // MCP annotations.destructiveHint said true (of a tool not read-only): the agent asks before
  // it runs (AgentOptions::confirm). The specification's default for a tool that says nothing
  // is destructive; asking before every such call would ask about every unannotated tool.
  bool destructive = false;
  // An answer's root object that declares no properties but takes any keys (response_format
  // json_object, or a schema such as {"type": "object", "additionalProperties": {...}}): its
  // schema, a free-form Object, decoded and checked as one value. Tools never have it: their
  // parameters that declare no properties take {}.
  std::shared_ptr<const Schema> free_form_arguments;

  // {"type": "function", "function": {...}} with standard JSON Schema types.
  Json to_openai() const;
  const Property* find_argument(const std::string& name) const;
};

// Whether `name` may name a tool: 1-128 of A-Z a-z 0-9 _ . : / - (OpenAI's rule with BFCL's
// dots and MCP's namespaces; a name is written into the call format's text, which other
// characters could break).
bool valid_tool_name(const std::string& name);

// Parses an array of tool definitions (or a single one) in any of the three dialects.
// Throws Error on an empty list, a duplicate or invalid name or an unsupported construct.
std::vector<ToolSpec> parse_tools(const Json& tools);

// A response schema (OpenAI's response_format json_schema) read as the one tool of an answer in
// that schema: named `name`, the root object's properties its arguments, every keyword as in a
// tool's parameters; a root that declares no properties takes any keys (free_form_arguments:
// {"type": "object"} is OpenAI's json_object). Throws Error naming the path and keyword for what
// parse_tools refuses, and for a root that is not an object or admits only {}.
ToolSpec parse_response_schema(const Json& schema, const std::string& name = "response");
// The same from a document that is either the schema or OpenAI's json_schema object around one
// ({"name", "schema"}; the name "response" where it gives none). Throws Error as above, and for
// a name that is not a string.
ToolSpec parse_response_schema_document(const Json& document);

// One tool call as the model wrote it.
struct ToolCall {
  std::string name;
  Json arguments = Json::object();
  // The call's id where a conversation gave one (an OpenAI assistant message's tool_calls), for
  // the templates that show it (and its result's tool_call_id) back to the model; not compared.
  std::string id{};

  Json to_json() const { return {{"name", name}, {"arguments", arguments}}; }
  bool operator==(const ToolCall& other) const {
    return name == other.name && arguments == other.arguments;
  }
};

// Why `call` does not satisfy the tools' schemas ("" if it does): unknown tool, missing
// required or unknown argument, wrong type, value outside an enum, or a checked keyword
// (minimum, maxLength, pattern, ...) violated. Names the argument path.
std::string schema_violation(const std::vector<ToolSpec>& tools, const ToolCall& call);

// Serialises JSON the way models were trained to write it (Python's json.dumps style:
// ", " and ": " separators, non-ASCII kept as UTF-8).
std::string dump_json(const Json& value);

}  // namespace sw
