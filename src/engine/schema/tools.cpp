// Tool definitions in three dialects -> one ToolSpec; JSON serialisation in the models' style.
#include "schemaweaver/tools.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "engine/schema/pattern.h"
#include "engine/schema/schema.h"

namespace sw {
namespace {

// Where in the input a problem sits: tool name plus JSON path, for error messages.
struct Where {
  std::string subject;  // "tool 'NAME'", "response schema 'NAME'"
  std::string path;

  Where at(const std::string& key) const { return {subject, path.empty() ? key : path + "." + key}; }
  Where at(size_t index) const { return {subject, path + "[" + std::to_string(index) + "]"}; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(subject + ": " + (path.empty() ? "" : path + ": ") + what);
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

// Every schema keyword is one of: read into the Schema's structure (type, properties, items,
// alternatives, references), a value keyword kept in Schema::checks (enforced while decoding by
// the grammars and checked on the finished value again), or an annotation without effect on
// values. Anything else is refused when the tools are read, naming the keyword's path, so that
// no constraint is silently dropped.
const std::set<std::string>& structure_keywords() {
  static const std::set<std::string> keys = {"type", "enum", "const", "items", "prefixItems", "additionalItems",
                                             "properties", "required", "anyOf", "oneOf", "allOf",
                                             "additionalProperties", "nullable", "$ref", "$defs", "definitions"};
  return keys;
}
const std::set<std::string>& value_keywords() {
  static const std::set<std::string> keys = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                             "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
                                             "uniqueItems", "multipleOf"};
  return keys;
}
const std::set<std::string>& annotation_keywords() {
  static const std::set<std::string> keys = {"description", "default", "title", "examples", "optional", "$schema",
                                             "$id", "$comment", "deprecated", "readOnly", "writeOnly", "example"};
  return keys;
}

// The most characters or items a length keyword may ask for: the grammar counts them out.
constexpr double kMaxCount = 20000;
// The largest bound a number keyword may set: the grammar writes the bound's digits, which a
// double holds exactly up to here.
constexpr double kMaxBound = 1e15;

const char* kFormatList = "date, time, date-time, uuid, email, ipv4, uri";

// OpenAPI's formats of numbers: annotations that constrain nothing JSON Schema checks.
bool number_format(const std::string& format) {
  return format == "int32" || format == "int64" || format == "float" || format == "double";
}

// A value keyword's value must be of the kind it takes; otherwise the check would be skipped.
void check_keyword_value(const std::string& key, const Json& value, const Where& where) {
  if (key == "pattern") {
    if (!value.is_string()) where.fail("must be a string (a regular expression)");
    try {
      Pattern checked(value.get<std::string>());
    } catch (const Error& e) {
      where.fail(e.what());
    }
  } else if (key == "format") {
    if (!value.is_string()) where.fail("must be a string");
    const std::string format = value.get<std::string>();
    if (!format_pattern(format) && !number_format(format))
      where.fail("format '" + format + "' cannot be enforced (enforced: " + kFormatList +
                 "; of numbers, int32, int64, float and double, which constrain nothing)");
  } else if (key == "uniqueItems") {
    if (!value.is_boolean()) where.fail("must be true or false");
    if (value == true) where.fail("uniqueItems cannot be enforced while decoding (a grammar cannot keep items apart)");
  } else if (key == "multipleOf") {
    where.fail("multipleOf cannot be enforced while decoding");
  } else if (key == "minLength" || key == "maxLength" || key == "minItems" || key == "maxItems") {
    if (!value.is_number_unsigned()) where.fail("must be a non-negative integer");
    if (value.get<double>() > kMaxCount) where.fail("counts above " + std::to_string(int(kMaxCount)) + " are not supported");
  } else if (!value.is_number()) {
    where.fail("must be a number");
  } else if (std::fabs(value.get<double>()) > kMaxBound) {
    where.fail("bounds beyond 1e15 are not supported");
  }
}

// What the value keywords mean for the schema's type, checked once the type is known: a keyword
// of another type has no effect (JSON Schema's rule), but one on a value of any type could not
// be enforced, and some combinations are refused.
void check_value_keywords(const Schema& schema, const Where& where) {
  const Json& c = schema.checks;
  // Alternatives and listed values are checked each (read_any_of, keep_admitted_values).
  if (c.empty() || !schema.enum_values.empty() || !schema.any_of.empty()) return;
  if (schema.type == Type::Any && schema.any_of.empty())
    where.fail("'" + c.begin().key() + "' needs a 'type' to be enforced");
  if (c.contains("format")) {
    const std::string format = c["format"].get<std::string>();
    const bool numeric = schema.type == Type::Integer || schema.type == Type::Number;
    if (numeric != number_format(format) && (numeric || schema.type == Type::String))
      where.at("format").fail("format '" + format + "' is not a format of " + (numeric ? "numbers" : "strings"));
    if (c.contains("pattern")) where.fail("'pattern' beside 'format' is not supported: give one of them");
  }
  if (schema.type == Type::Number) {
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (c.contains(key) && std::floor(c[key].get<double>()) != c[key].get<double>())
        where.at(key).fail("a number's bound must be a whole number to be enforced while decoding");
    }
  }
  auto above = [&](const char* low, const char* high) {
    return c.contains(low) && c.contains(high) && c[low].get<double>() > c[high].get<double>();
  };
  if (above("minimum", "maximum") || above("minLength", "maxLength") || above("minItems", "maxItems"))
    where.fail("no value can satisfy both bounds");
}

// Reads the schemas of one tool's parameters. References ("$ref": "#/$defs/X") point into the
// parameters schema and are read in place; one met again inside itself (a recursive schema) is
// unfolded kRecursionDepth times, and beyond that admits no value: an optional property holding
// it is left out, an array of it is empty, an alternative of it dropped, and a schema that needs
// it admits no value either (refused at the top). A tool whose references unfold into too many
// schemas is refused.
class SchemaReader {
 public:
  static constexpr int kRecursionDepth = 3;

  explicit SchemaReader(const Json& root) : root_(root) {}

  // A schema no value matches, marked by "not": {}, which read() refuses as a keyword: only
  // the reader makes it, and it never leaves the reader.
  static Schema never() {
    Schema schema;
    schema.checks["not"] = Json::object();
    return schema;
  }
  static bool is_never(const Schema& schema) { return schema.checks.contains("not"); }

  Schema read(const Json& node, const Where& where) {
    if (!node.is_object()) where.fail("a schema must be a JSON object");
    if (++schemas_read_ > kMaxSchemas) where.fail("the schema unfolds into more than 10000 schemas");
    if (node.contains("$ref")) return read_reference(node, where);
    Schema schema;
    for (const auto& [key, value] : node.items()) {
      if (structure_keywords().count(key) || annotation_keywords().count(key) || key.rfind("x-", 0) == 0) continue;
      if (!value_keywords().count(key)) where.at(key).fail("'" + key + "' is not supported");
      check_keyword_value(key, value, where.at(key));
      if (key != "uniqueItems") schema.checks[key] = value;  // uniqueItems: false says nothing
    }
    if (node.contains("nullable") && node["nullable"].is_boolean()) schema.nullable = node["nullable"].get<bool>();
    read_annotations(node, schema);
    if (node.contains("allOf")) return read_all_of(node, schema, where);
    if (node.contains("anyOf")) return read_any_of(node, "anyOf", schema, where);
    if (node.contains("oneOf")) return read_any_of(node, "oneOf", schema, where);
    if (node.contains("type")) {
      read_type(node, schema, where);
    } else if (node.contains("properties") || node.contains("required") || node.contains("additionalProperties")) {
      schema.type = Type::Object;  // what else the keywords could describe
    } else if (node.contains("items") || node.contains("prefixItems")) {
      schema.type = Type::Array;
    }
    if (node.contains("enum")) {
      const Json& values = node["enum"];
      if (!values.is_array() || values.empty()) where.at("enum").fail("must be a non-empty list");
      schema.enum_values.assign(values.begin(), values.end());
    }
    if (node.contains("const")) schema.enum_values = {node["const"]};
    if (!schema.enum_values.empty()) keep_admitted_values(schema, node, where);
    if (schema.type == Type::Array && !read_items(node, schema, where)) return never();
    if (schema.type == Type::Object && !read_object_members(node, schema, where)) return never();
    check_value_keywords(schema, where);
    return schema;
  }

 private:
  static constexpr int kMaxSchemas = 10000;

  // The annotations a Schema keeps: description and default.
  static void read_annotations(const Json& node, Schema& schema) {
    if (node.contains("description") && node["description"].is_string())
      schema.description = node["description"].get<std::string>();
    if (node.contains("default")) schema.default_value = node["default"];
  }

  Schema read_reference(const Json& node, const Where& where) {
    const Json& ref = node["$ref"];
    if (!ref.is_string()) where.at("$ref").fail("must be a string");
    const std::string target = ref.get<std::string>();
    for (const auto& [key, value] : node.items()) {
      if (key != "$ref" && !annotation_keywords().count(key) && key != "$defs" && key != "definitions")
        where.at(key).fail("'" + key + "' beside '$ref' is not supported");
    }
    if (std::count(open_refs_.begin(), open_refs_.end(), target) >= kRecursionDepth) return never();
    if (target.rfind("#", 0) != 0) where.at("$ref").fail("only references inside the tool's schema ('#/...') are supported");
    const Json* found = nullptr;
    try {
      const Json& resolved = root_.at(Json::json_pointer(target.substr(1)));
      found = &resolved;
    } catch (const std::exception&) {
      where.at("$ref").fail("'" + target + "' does not point to a schema of this tool");
    }
    open_refs_.push_back(target);
    Schema schema = read(*found, where.at("$ref"));
    open_refs_.pop_back();
    read_annotations(node, schema);  // those beside the reference win
    return schema;
  }

  // allOf of object schemas is one object with all their properties; one schema is itself.
  Schema read_all_of(const Json& node, Schema& schema, const Where& where) {
    const Json& list = node["allOf"];
    if (!list.is_array() || list.empty()) where.at("allOf").fail("must be a non-empty list of schemas");
    for (const char* other : {"type", "anyOf", "oneOf", "enum", "const", "properties", "items"}) {
      if (node.contains(other)) where.at(other).fail("'" + std::string(other) + "' beside 'allOf' is not supported");
    }
    if (!schema.checks.empty()) where.fail("value keywords beside 'allOf' are not supported");
    if (list.size() == 1) {
      Schema only = read(list[0], where.at("allOf").at(0));
      if (!schema.description.empty() && !is_never(only)) only.description = schema.description;
      return only;
    }
    schema.type = Type::Object;
    for (size_t i = 0; i < list.size(); ++i) {
      Schema part = read(list[i], where.at("allOf").at(i));
      if (is_never(part)) return never();
      if (part.type != Type::Object || part.nullable || !part.any_of.empty() || !part.enum_values.empty() ||
          !part.checks.empty())
        where.at("allOf").at(i).fail("only object schemas can be combined by 'allOf'");
      for (Property& p : part.properties) {
        for (const Property& known : schema.properties) {
          if (known.name == p.name) where.at("allOf").at(i).fail("property '" + p.name + "' is declared twice");
        }
        schema.properties.push_back(std::move(p));
      }
    }
    schema.free_form = false;
    return schema;
  }

  // enum and const list values; those the schema's type and value keywords do not admit can
  // never be valid, and a list with none left is an error.
  void keep_admitted_values(Schema& schema, const Json& node, const Where& where) {
    Schema without_enum = schema;
    without_enum.enum_values.clear();
    if (!node.contains("type")) without_enum.type = Type::Any;
    std::vector<Json> admitted;
    for (const Json& v : schema.enum_values) {
      if ((v.is_null() && schema.nullable) || value_violation(without_enum, v, "").empty()) admitted.push_back(v);
    }
    if (admitted.empty()) where.at(node.contains("const") ? "const" : "enum").fail("no value listed fits the schema's type and keywords");
    schema.enum_values = std::move(admitted);
  }

  // False if the array admits no value (a tuple element beyond the recursion bound).
  bool read_items(const Json& node, Schema& schema, const Where& where) {
    // A tuple: prefixItems (or, in older drafts, a list under items), then items (or
    // additionalItems) for every element after it.
    const char* tuple_key = node.contains("prefixItems") ? "prefixItems" : node.contains("items") && node["items"].is_array() ? "items" : nullptr;
    const char* rest_key = tuple_key && std::string(tuple_key) == "items" ? "additionalItems" : "items";
    if (tuple_key) {
      const Json& list = node[tuple_key];
      if (!list.is_array() || list.empty()) where.at(tuple_key).fail("must be a non-empty list of schemas");
      for (size_t i = 0; i < list.size(); ++i) {
        schema.prefix_items.push_back(read(list[i], where.at(tuple_key).at(i)));
        if (is_never(schema.prefix_items.back())) return false;
      }
      if (schema.checks.contains("minItems") || schema.checks.contains("maxItems"))
        where.fail("minItems and maxItems beside a tuple's items are not supported");
    }
    if (!node.contains(rest_key) || node[rest_key] == true) return true;
    if (node[rest_key] == false) {
      if (!tuple_key) where.at(rest_key).fail("an array whose items are all refused is not supported");
      schema.closed_tuple = true;
      return true;
    }
    Schema items = read(node[rest_key], where.at(rest_key));
    if (!is_never(items)) {
      schema.items = std::make_shared<Schema>(std::move(items));
    } else if (tuple_key) {
      schema.closed_tuple = true;  // nothing beyond the tuple
    } else {
      // Elements beyond the recursion bound: only the empty array is left.
      if (schema.checks.value("minItems", 0) > 0) return false;
      schema.checks["maxItems"] = uint64_t(0);  // as a parsed count: unsigned
    }
    return true;
  }

  // False if the object admits no value (a required property beyond the recursion bound).
  bool read_object_members(const Json& node, Schema& schema, const Where& where) {
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
        Property property{name, read(sub, where.at("properties").at(name)), required.count(name) > 0};
        if (is_never(property.schema)) {
          if (property.required) return false;
          continue;  // beyond the recursion bound: left out
        }
        schema.properties.push_back(std::move(property));
      }
    }
    for (const std::string& name : required) {
      bool declared = props_declare(node, name);
      if (!declared) where.at("required").fail("'" + name + "' is required but not declared");
    }
    // additionalProperties says whether keys beyond the declared ones may appear: a call never
    // writes undeclared keys of an object with declared properties; an object without any takes
    // any keys (typed by a schema there), or none at all when it is false.
    const Json additional = node.value("additionalProperties", Json(true));
    if (!additional.is_boolean() && !additional.is_object())
      where.at("additionalProperties").fail("must be true, false or a schema");
    schema.free_form = schema.properties.empty() && !props_declare_any(node) && additional != false;
    if (additional.is_object() && schema.free_form) {
      Schema values = read(additional, where.at("additionalProperties"));
      if (is_never(values)) schema.free_form = false;  // beyond the recursion bound: {} only
      else schema.items = std::make_shared<Schema>(std::move(values));
    }
    return true;
  }

  static bool props_declare(const Json& node, const std::string& name) {
    return node.contains("properties") && node["properties"].is_object() && node["properties"].contains(name);
  }
  static bool props_declare_any(const Json& node) {
    return node.contains("properties") && node["properties"].is_object() && !node["properties"].empty();
  }

  // The keywords beside anyOf (or a list of types) hold for every alternative: each alternative
  // takes them, so that its grammar enforces them.
  static void hand_down_checks(const Schema& parent, Schema& alternative, const Where& where) {
    for (const auto& [key, value] : parent.checks.items()) {
      if (alternative.checks.contains(key) && alternative.checks[key] != value)
        where.fail("'" + key + "' both beside and inside an alternative is not supported");
      alternative.checks[key] = value;
    }
  }

  // Whether no value can match both schemas, as far as their types, listed values and a shared
  // required property with listed values (a discriminator) tell; false when unsure.
  static bool exclusive(const Schema& a, const Schema& b) {
    if (a.nullable && b.nullable) return false;
    if (!a.enum_values.empty() && !b.enum_values.empty()) {
      for (const Json& value : a.enum_values) {
        if (std::find(b.enum_values.begin(), b.enum_values.end(), value) != b.enum_values.end()) return false;
      }
      return true;
    }
    if (!a.any_of.empty() || !b.any_of.empty() || a.type == Type::Any || b.type == Type::Any) return false;
    auto numeric = [](Type t) { return t == Type::Integer || t == Type::Number; };
    if (a.type != b.type && !(numeric(a.type) && numeric(b.type))) return true;
    if (a.type != Type::Object) return false;
    for (const Property& pa : a.properties) {
      for (const Property& pb : b.properties) {
        if (pa.name == pb.name && pa.required && pb.required && !pa.schema.nullable && !pb.schema.nullable &&
            !pa.schema.enum_values.empty() && !pb.schema.enum_values.empty() && exclusive(pa.schema, pb.schema))
          return true;
      }
    }
    return false;
  }

  // oneOf is decoded as anyOf, which is exact only when no value can match two alternatives.
  static void require_exclusive(const std::vector<Schema>& alternatives, const Where& where) {
    for (size_t i = 0; i < alternatives.size(); ++i) {
      for (size_t j = i + 1; j < alternatives.size(); ++j) {
        if (!exclusive(alternatives[i], alternatives[j]))
          where.fail("alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                     " may both match a value (not enforceable: give them other types, disjoint enums or a "
                     "required discriminator property, or use anyOf)");
      }
    }
  }

  Schema read_any_of(const Json& node, const char* key, Schema& schema, const Where& where) {
    const Json& list = node[key];
    if (!list.is_array() || list.empty()) where.at(key).fail("must be a non-empty list of schemas");
    bool any_admits = false;
    for (size_t i = 0; i < list.size(); ++i) {
      Schema alternative = read(list[i], where.at(key).at(i));
      if (is_never(alternative)) continue;  // beyond the recursion bound
      any_admits = true;
      // {"anyOf": [X, {"type": "null"}]} is the common spelling of "X or null".
      if (alternative.type == Type::Null && alternative.enum_values.empty()) {
        schema.nullable = true;
      } else {
        hand_down_checks(schema, alternative, where.at(key).at(i));
        check_value_keywords(alternative, where.at(key).at(i));
        schema.any_of.push_back(std::move(alternative));
      }
    }
    if (!any_admits) return never();
    if (std::string(key) == "oneOf") require_exclusive(schema.any_of, where.at(key));
    if (schema.any_of.size() == 1) {
      bool nullable = schema.nullable;
      Schema only = std::move(schema.any_of.front());
      only.description = schema.description.empty() ? only.description : schema.description;
      schema = std::move(only);
      schema.nullable = schema.nullable || nullable;
    } else if (schema.any_of.empty()) {
      schema.type = Type::Null;
    }
    return schema;
  }

  void read_type(const Json& node, Schema& schema, const Where& where) {
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
        hand_down_checks(schema, alternative, where);
        check_value_keywords(alternative, where);
        schema.any_of.push_back(alternative);
      }
    }
  }

  const Json& root_;
  std::vector<std::string> open_refs_;
  int schemas_read_ = 0;
};

// Returns the dialect-independent parts of one definition: name, description, parameters
// schema node (may be null), MCP's read-only and destructive hints.
struct RawTool {
  const Json* body = nullptr;
  const Json* parameters = nullptr;
  bool read_only = false;
  bool destructive = false;
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
    raw.read_only = entry["annotations"].value("readOnlyHint", Json(false)) == true;
    raw.destructive = !raw.read_only && entry["annotations"].value("destructiveHint", Json(false)) == true;
  }
  return raw;
}

// The properties of an object schema `node` (a tool's parameters, a response schema).
Schema read_object(const Json& node, const Where& where) {
  Schema object = SchemaReader(node).read(node, where);
  if (SchemaReader::is_never(object))
    where.fail("a recursive '$ref' admits no value within " + std::to_string(SchemaReader::kRecursionDepth) +
               " levels (it is always required)");
  if (object.type != Type::Object && object.type != Type::Any) where.fail("the schema must describe an object");
  return object;
}

std::vector<Property> read_object_properties(const Json& node, const Where& where) {
  return read_object(node, where).properties;
}

ToolSpec parse_tool(const Json& entry, size_t index) {
  Where where{"tool '#" + std::to_string(index) + "'", ""};
  RawTool raw = unwrap_dialect(entry, where);
  const Json& body = *raw.body;
  if (!body.contains("name") || !body["name"].is_string() || body["name"].get<std::string>().empty())
    where.fail("missing 'name'");
  if (!valid_tool_name(body["name"].get<std::string>()))
    where.fail("the name '" + body["name"].get<std::string>().substr(0, 200) +
               "' is not 1-128 of the characters A-Z a-z 0-9 _ . : / -");
  ToolSpec tool;
  tool.name = body["name"].get<std::string>();
  tool.read_only = raw.read_only;
  tool.destructive = raw.destructive;
  where.subject = "tool '" + tool.name + "'";
  if (body.contains("description") && body["description"].is_string())
    tool.description = body["description"].get<std::string>();
  if (raw.parameters && !raw.parameters->is_null()) tool.arguments = read_object_properties(*raw.parameters, where.at("parameters"));
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
  if (type == Type::Array && !prefix_items.empty()) {
    out["prefixItems"] = Json::array();
    for (const Schema& s : prefix_items) out["prefixItems"].push_back(s.to_json());
    if (closed_tuple) out["items"] = false;
  }
  if (type == Type::Array && items) out["items"] = items->to_json();
  if (type == Type::Object && !free_form && properties.empty()) out["additionalProperties"] = false;
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
  function["parameters"] = free_form_arguments ? free_form_arguments->to_json() : properties_to_json(arguments);
  return {{"type", "function"}, {"function", function}};
}

const Property* ToolSpec::find_argument(const std::string& argument) const {
  for (const Property& p : arguments) {
    if (p.name == argument) return &p;
  }
  return nullptr;
}

bool valid_tool_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum((unsigned char)c) || c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
  });
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

ToolSpec parse_response_schema_document(const Json& document) {
  const bool wrapped = document.is_object() && document.contains("schema") && document["schema"].is_object();
  if (!wrapped) return parse_response_schema(document);
  if (document.contains("name") && !document["name"].is_string()) throw Error("'name' must be a string");
  return parse_response_schema(document["schema"], document.value("name", std::string("response")));
}

ToolSpec parse_response_schema(const Json& schema, const std::string& name) {
  if (!valid_tool_name(name))
    throw Error("the response schema's name '" + name.substr(0, 200) + "' is not 1-128 of the characters A-Z a-z 0-9 _ . : / -");
  const Where where{"response schema '" + name + "'", ""};
  if (!schema.is_object()) where.fail("must be a JSON object");
  ToolSpec answer;
  answer.name = name;
  if (schema.contains("description") && schema["description"].is_string())
    answer.description = schema["description"].get<std::string>();
  Schema root = read_object(schema, where);
  answer.arguments = std::move(root.properties);
  if (!answer.arguments.empty()) return answer;
  // No declared keys: any keys (typed by additionalProperties), decoded as one value.
  const bool untyped = root.type == Type::Any && root.any_of.empty() && root.enum_values.empty() && root.checks.empty();
  if (untyped) root.type = Type::Object, root.free_form = true;  // {}: an answer is an object
  if (root.type != Type::Object || !root.any_of.empty() || !root.enum_values.empty())
    where.fail("the root must be an object schema with properties or additionalProperties (not anyOf or enum)");
  if (!root.free_form) where.fail("the root object declares no properties and takes no others: its one value is {}");
  answer.free_form_arguments = std::make_shared<const Schema>(std::move(root));
  return answer;
}

std::string dump_json(const Json& value) {
  std::string out;
  dump_to(value, out);
  return out;
}

}  // namespace sw
