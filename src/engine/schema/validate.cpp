// Checking a finished call against the tools' schemas, including the keywords the grammar does
// not encode (bounds, lengths, patterns).
#include <cmath>
#include <set>

#include "engine/schema/pattern.h"
#include "engine/schema/schema.h"

namespace sw {
namespace {

std::string check_keywords(const Schema& schema, const Json& value, const std::string& path) {
  auto fail = [&](const std::string& key) {
    return path + ": " + dump_json(value) + " violates " + key + " " + dump_json(schema.checks[key]);
  };
  for (const auto& [key, limit] : schema.checks.items()) {
    bool ok = true;
    if (value.is_number() && limit.is_number()) {
      double v = value.get<double>(), l = limit.get<double>();
      if (key == "minimum") ok = v >= l;
      else if (key == "maximum") ok = v <= l;
      else if (key == "exclusiveMinimum") ok = v > l;
      else if (key == "exclusiveMaximum") ok = v < l;
      else if (key == "multipleOf") ok = l == 0 || std::fabs(std::remainder(v, l)) < 1e-9;
    } else if (value.is_string() && limit.is_number_unsigned()) {
      size_t length = 0;  // in code points
      for (unsigned char c : value.get_ref<const std::string&>()) length += (c & 0xC0) != 0x80;
      if (key == "minLength") ok = length >= limit.get<size_t>();
      else if (key == "maxLength") ok = length <= limit.get<size_t>();
    } else if (value.is_string() && (key == "pattern" || key == "format")) {
      const std::string pattern = string_pattern(schema);
      try {
        ok = pattern.empty() || Pattern(pattern).search(value.get<std::string>());
      } catch (const Error& e) {
        return path + ": " + e.what();
      }
    } else if (value.is_array() && limit.is_number_unsigned()) {
      if (key == "minItems") ok = value.size() >= limit.get<size_t>();
      else if (key == "maxItems") ok = value.size() <= limit.get<size_t>();
    } else if (value.is_array() && key == "uniqueItems" && limit == true) {
      std::set<std::string> seen;
      for (const Json& item : value) ok = ok && seen.insert(item.dump()).second;
    }
    if (!ok) return fail(key);
  }
  return "";
}

std::string object_violation(const std::vector<Property>& properties, const Json& value, const std::string& path) {
  for (const Property& p : properties) {
    if (p.required && !value.contains(p.name)) return path + ": missing required argument '" + p.name + "'";
  }
  for (const auto& [key, item] : value.items()) {
    const Property* declared = nullptr;
    for (const Property& p : properties) declared = p.name == key ? &p : declared;
    if (!declared) return path + ": unknown argument '" + key + "'";
    std::string why = value_violation(declared->schema, item, path + "." + key);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

std::string value_violation(const Schema& schema, const Json& value, const std::string& path) {
  if (schema.nullable && value.is_null()) return "";
  if (!schema.enum_values.empty()) {
    for (const Json& allowed : schema.enum_values) {
      if (allowed == value) return check_keywords(schema, value, path);
    }
    return path + ": " + dump_json(value) + " is not one of " + dump_json(Json(schema.enum_values));
  }
  if (!schema.any_of.empty()) {
    for (const Schema& alternative : schema.any_of) {
      if (value_violation(alternative, value, path).empty()) return check_keywords(schema, value, path);
    }
    return path + ": " + dump_json(value) + " matches none of the anyOf alternatives";
  }
  if (!has_type(value, schema.type)) return path + ": " + dump_json(value) + " has the wrong type";
  if (value.is_array()) {
    const size_t tuple = schema.prefix_items.size();
    if (schema.closed_tuple && value.size() > tuple)
      return path + ": " + std::to_string(value.size()) + " items where the tuple has " + std::to_string(tuple);
    for (size_t i = 0; i < value.size(); ++i) {
      const Schema* item = i < tuple ? &schema.prefix_items[i] : schema.items.get();
      std::string why = item ? value_violation(*item, value[i], path + "[" + std::to_string(i) + "]") : "";
      if (!why.empty()) return why;
    }
  }
  if (value.is_object() && schema.type == Type::Object) {
    std::string why;
    if (!schema.free_form) {
      why = object_violation(schema.properties, value, path);
    } else if (schema.items) {
      for (const auto& [key, item] : value.items()) {
        why = value_violation(*schema.items, item, path + "." + key);
        if (!why.empty()) break;
      }
    }
    if (!why.empty()) return why;
  }
  return check_keywords(schema, value, path);
}

std::string schema_violation(const std::vector<ToolSpec>& tools, const ToolCall& call) {
  for (const ToolSpec& tool : tools) {
    if (tool.name != call.name) continue;
    if (tool.free_form_arguments) return value_violation(*tool.free_form_arguments, call.arguments, call.name);
    return object_violation(tool.arguments, call.arguments, call.name);
  }
  return "unknown tool '" + call.name + "'";
}

}  // namespace sw
