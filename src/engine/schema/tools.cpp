// Tool definitions in three dialects -> one ToolSpec; JSON serialisation in the models' style.
#include "schemaweaver/tools.h"

#include <map>
#include <set>

#include "engine/schema/pattern.h"

namespace sw {
namespace {

// Where in the input a problem sits: tool name plus JSON path, for error messages.
struct Where {
  std::string tool;
  std::string path;

  Where at(const std::string& key) const { return {tool, path.empty() ? key : path + "." + key}; }
  Where at(size_t index) const { return {tool, path + "[" + std::to_string(index) + "]"}; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("tool '" + tool + "': " + (path.empty() ? "" : path + ": ") + what);
  }
};

// JSON Schema names and BFCL's python names for the same types.
const std::map<std::string, Type>& type_names() {
  static const std::map<std::string, Type> names = {
      {"string", Type::String},   {"str", Type::String},      {"integer", Type::Integer},
      {"int", Type::Integer},     {"number", Type::Number},   {"float", Type::Number},
      {"boolean", Type::Boolean}, {"bool", Type::Boolean},    {"null", Type::Null},
      {"array", Type::Array},     {"list", Type::Array},      {"tuple", Type::Array},
      {"object", Type::Object},   {"dict", Type::Object},     {"any", Type::Any},
  };
  return names;
}

Type parse_type_name(const Json& name, const Where& where) {
  if (!name.is_string()) where.fail("'type' must be a string or a list of strings");
  auto found = type_names().find(name.get<std::string>());
  if (found == type_names().end()) where.fail("unsupported type '" + name.get<std::string>() + "'");
  return found->second;
}

Schema parse_schema(const Json& node, const Where& where);

// Every schema keyword is one of: shaping the grammar values are decoded under, checked on the
// finished value (Schema::checks), or an annotation without effect on values. Anything else is
// an error, so that no constraint is silently dropped.
const std::set<std::string>& decoded_keywords() {
  static const std::set<std::string> keys = {"type", "enum", "const", "items", "properties", "required",
                                             "anyOf", "oneOf", "additionalProperties", "nullable"};
  return keys;
}
const std::set<std::string>& checked_keywords() {
  static const std::set<std::string> keys = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                             "multipleOf", "minLength", "maxLength", "pattern",
                                             "minItems", "maxItems", "uniqueItems"};
  return keys;
}
const std::set<std::string>& annotation_keywords() {
  static const std::set<std::string> keys = {"description", "default", "title", "examples", "format",
                                             "optional", "$schema", "$id", "$comment", "deprecated",
                                             "readOnly", "writeOnly", "example"};
  return keys;
}

// A checked keyword's value must be of the kind it takes: a number for a bound, a count for a
// length, a valid pattern of the supported subset; otherwise the check would be skipped.
void check_keyword_value(const std::string& key, const Json& value, const Where& where) {
  if (key == "pattern") {
    if (!value.is_string()) where.fail("must be a string (a regular expression)");
    try {
      Pattern checked(value.get<std::string>());
    } catch (const Error& e) {
      where.fail(e.what());
    }
  } else if (key == "uniqueItems") {
    if (!value.is_boolean()) where.fail("must be true or false");
  } else if (key == "minLength" || key == "maxLength" || key == "minItems" || key == "maxItems") {
    if (!value.is_number_unsigned()) where.fail("must be a non-negative integer");
  } else if (!value.is_number()) {
    where.fail("must be a number");
  } else if (key == "multipleOf" && value.get<double>() <= 0) {
    where.fail("must be greater than 0");
  }
}

void parse_object_members(const Json& node, Schema& schema, const Where& where) {
  std::set<std::string> required;
  if (node.contains("required")) {
    const Json& list = node["required"];
    if (!list.is_array()) where.at("required").fail("must be a list of property names");
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) where.at("required").at(i).fail("must be a string");
      required.insert(list[i].get<std::string>());
    }
  }
  if (node.contains("properties")) {
    const Json& props = node["properties"];
    if (!props.is_object()) where.at("properties").fail("must be an object");
    for (const auto& [name, sub] : props.items()) {
      Property property{name, parse_schema(sub, where.at("properties").at(name)),
                        required.count(name) > 0};
      schema.properties.push_back(std::move(property));
    }
  }
  for (const std::string& name : required) {
    bool declared = false;
    for (const Property& p : schema.properties) declared = declared || p.name == name;
    if (!declared) where.at("required").fail("'" + name + "' is required but not declared");
  }
  schema.free_form = schema.properties.empty();
  // additionalProperties: false (or true) only says whether undeclared keys are allowed; a
  // call never writes undeclared keys of a declared object, and a free-form one may take any.
  // A schema there types the values of a free-form object.
  if (node.contains("additionalProperties") && node["additionalProperties"].is_object() && schema.free_form)
    schema.items = std::make_shared<Schema>(parse_schema(node["additionalProperties"], where.at("additionalProperties")));
}

void parse_any_of(const Json& node, const char* key, Schema& schema, const Where& where) {
  const Json& list = node[key];
  if (!list.is_array() || list.empty()) where.at(key).fail("must be a non-empty list of schemas");
  for (size_t i = 0; i < list.size(); ++i) {
    Schema alternative = parse_schema(list[i], where.at(key).at(i));
    // {"anyOf": [X, {"type": "null"}]} is the common spelling of "X or null".
    if (alternative.type == Type::Null && alternative.enum_values.empty()) {
      schema.nullable = true;
    } else {
      schema.any_of.push_back(std::move(alternative));
    }
  }
  if (schema.any_of.size() == 1) {
    bool nullable = schema.nullable;
    Schema only = std::move(schema.any_of.front());
    only.description = schema.description.empty() ? only.description : schema.description;
    schema = std::move(only);
    schema.nullable = schema.nullable || nullable;
  } else if (schema.any_of.empty()) {
    schema.type = Type::Null;
  }
}

void parse_type(const Json& node, Schema& schema, const Where& where) {
  const Json& type = node["type"];
  if (!type.is_array()) {
    schema.type = parse_type_name(type, where.at("type"));
    return;
  }
  // ["string", "null"]: one type, nullable. Several non-null types become anyOf.
  std::vector<Type> types;
  for (size_t i = 0; i < type.size(); ++i) {
    Type t = parse_type_name(type[i], where.at("type").at(i));
    if (t == Type::Null) schema.nullable = true;
    else types.push_back(t);
  }
  if (types.empty()) where.at("type").fail("empty type list");
  schema.type = types.front();
  if (types.size() > 1) {
    for (Type t : types) {
      Schema alternative;
      alternative.type = t;
      alternative.free_form = t == Type::Object;
      schema.any_of.push_back(alternative);
    }
  }
}

Schema parse_schema(const Json& node, const Where& where) {
  if (!node.is_object()) where.fail("a schema must be a JSON object");
  Schema schema;
  for (const auto& [key, value] : node.items()) {
    if (decoded_keywords().count(key) || annotation_keywords().count(key) || key.rfind("x-", 0) == 0) continue;
    if (!checked_keywords().count(key)) where.at(key).fail("'" + key + "' is not supported");
    check_keyword_value(key, value, where.at(key));
    schema.checks[key] = value;
  }
  if (node.contains("nullable") && node["nullable"].is_boolean()) schema.nullable = node["nullable"].get<bool>();
  if (node.contains("description") && node["description"].is_string())
    schema.description = node["description"].get<std::string>();
  if (node.contains("default")) schema.default_value = node["default"];
  if (node.contains("anyOf")) {
    parse_any_of(node, "anyOf", schema, where);
    return schema;
  }
  if (node.contains("oneOf")) {
    parse_any_of(node, "oneOf", schema, where);
    return schema;
  }
  if (node.contains("type")) parse_type(node, schema, where);
  if (node.contains("enum")) {
    const Json& values = node["enum"];
    if (!values.is_array() || values.empty()) where.at("enum").fail("must be a non-empty list");
    schema.enum_values.assign(values.begin(), values.end());
  }
  if (node.contains("const")) schema.enum_values = {node["const"]};
  if (schema.type == Type::Array && node.contains("items")) {
    const Json& items = node["items"];
    // A list of schemas (tuple form) is accepted when all entries agree; else any element.
    if (items.is_array()) {
      if (!items.empty()) schema.items = std::make_shared<Schema>(parse_schema(items[0], where.at("items").at(0)));
    } else {
      schema.items = std::make_shared<Schema>(parse_schema(items, where.at("items")));
    }
  }
  if (schema.type == Type::Object) parse_object_members(node, schema, where);
  return schema;
}

// Returns the dialect-independent parts of one definition: name, description, parameters
// schema node (may be null), read-only flag.
struct RawTool {
  const Json* body = nullptr;
  const Json* parameters = nullptr;
  bool read_only = false;
};

RawTool unwrap_dialect(const Json& entry, const Where& where) {
  if (!entry.is_object()) where.fail("a tool definition must be a JSON object");
  RawTool raw;
  if (entry.contains("function")) {  // OpenAI
    raw.body = &entry["function"];
    if (!raw.body->is_object()) where.at("function").fail("must be an object");
  } else {
    raw.body = &entry;  // MCP and BFCL carry the fields at the top level
  }
  const Json& body = *raw.body;
  for (const char* key : {"parameters", "inputSchema", "input_schema"}) {
    if (body.contains(key)) raw.parameters = &body[key];
  }
  if (entry.contains("annotations") && entry["annotations"].is_object()) {
    raw.read_only = entry["annotations"].value("readOnlyHint", false);
  }
  return raw;
}

ToolSpec parse_tool(const Json& entry, size_t index) {
  Where where{"#" + std::to_string(index), ""};
  RawTool raw = unwrap_dialect(entry, where);
  const Json& body = *raw.body;
  if (!body.contains("name") || !body["name"].is_string() || body["name"].get<std::string>().empty())
    where.fail("missing 'name'");
  ToolSpec tool;
  tool.name = body["name"].get<std::string>();
  tool.read_only = raw.read_only;
  where.tool = tool.name;
  if (body.contains("description") && body["description"].is_string())
    tool.description = body["description"].get<std::string>();
  if (raw.parameters && !raw.parameters->is_null()) {
    Schema parameters = parse_schema(*raw.parameters, where.at("parameters"));
    if (parameters.type != Type::Object && parameters.type != Type::Any)
      where.at("parameters").fail("the parameters schema must describe an object");
    tool.arguments = std::move(parameters.properties);
  }
  return tool;
}

const char* standard_type_name(Type type) {
  switch (type) {
    case Type::String: return "string";
    case Type::Integer: return "integer";
    case Type::Number: return "number";
    case Type::Boolean: return "boolean";
    case Type::Null: return "null";
    case Type::Array: return "array";
    case Type::Object: return "object";
    case Type::Any: return nullptr;
  }
  return nullptr;
}

Json properties_to_json(const std::vector<Property>& properties) {
  Json out = {{"type", "object"}, {"properties", Json::object()}};
  Json required = Json::array();
  for (const Property& p : properties) {
    out["properties"][p.name] = p.schema.to_json();
    if (p.required) required.push_back(p.name);
  }
  if (!required.empty()) out["required"] = required;
  return out;
}

void dump_to(const Json& value, std::string& out) {
  switch (value.type()) {
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ", ";
        first = false;
        out += Json(key).dump(-1, ' ', false, Json::error_handler_t::replace);
        out += ": ";
        dump_to(item, out);
      }
      out += '}';
      return;
    }
    case Json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < value.size(); ++i) {
        if (i) out += ", ";
        dump_to(value[i], out);
      }
      out += ']';
      return;
    }
    default:
      out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

}  // namespace

Json Schema::to_json() const {
  Json out = Json::object();
  if (!any_of.empty()) {
    out["anyOf"] = Json::array();
    for (const Schema& s : any_of) out["anyOf"].push_back(s.to_json());
    if (nullable) out["anyOf"].push_back({{"type", "null"}});
  } else if (const char* name = standard_type_name(type)) {
    out["type"] = nullable ? Json::array({name, "null"}) : Json(name);
  }
  if (!description.empty()) out["description"] = description;
  if (!enum_values.empty()) out["enum"] = enum_values;
  if (type == Type::Array && items) out["items"] = items->to_json();
  if (type == Type::Object && free_form && items) out["additionalProperties"] = items->to_json();
  for (const auto& [key, value] : checks.items()) out[key] = value;
  if (type == Type::Object && !properties.empty()) {
    Json object = properties_to_json(properties);
    out["properties"] = object["properties"];
    if (object.contains("required")) out["required"] = object["required"];
  }
  if (default_value) out["default"] = *default_value;
  return out;
}

Json ToolSpec::to_openai() const {
  Json function = {{"name", name}, {"description", description}};
  function["parameters"] = properties_to_json(arguments);
  return {{"type", "function"}, {"function", function}};
}

const Property* ToolSpec::find_argument(const std::string& argument) const {
  for (const Property& p : arguments) {
    if (p.name == argument) return &p;
  }
  return nullptr;
}

std::vector<ToolSpec> parse_tools(const Json& tools) {
  if (tools.is_object()) return parse_tools(Json::array({tools}));
  if (!tools.is_array()) throw Error("tools: expected a JSON array of tool definitions");
  if (tools.empty()) throw Error("tools: the tool list is empty");
  std::vector<ToolSpec> specs;
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    ToolSpec tool = parse_tool(tools[i], i);
    if (!names.insert(tool.name).second) throw Error("tools: duplicate tool name '" + tool.name + "'");
    specs.push_back(std::move(tool));
  }
  return specs;
}

std::string dump_json(const Json& value) {
  std::string out;
  dump_to(value, out);
  return out;
}

}  // namespace sw
