// BFCL v4 data loading, sampling and the AST checker (BFCL's semantics, in C++).
#include "bfcl/bfcl.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>

namespace sw::bfcl {
namespace {

// ---- Python value semantics -------------------------------------------------------------
// BFCL's checker runs on values from json.loads, compared with Python's ==. These helpers
// reproduce what matters: the python type of a value and Python equality (1 == 1.0 == True).

enum class PyType { None, Bool, Int, Float, Str, List, Dict };

PyType py_type(const Json& v) {
  switch (v.type()) {
    case Json::value_t::boolean: return PyType::Bool;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return PyType::Int;
    case Json::value_t::number_float: return PyType::Float;
    case Json::value_t::string: return PyType::Str;
    case Json::value_t::array: return PyType::List;
    case Json::value_t::object: return PyType::Dict;
    default: return PyType::None;
  }
}

bool is_numeric(const Json& v) {
  PyType t = py_type(v);
  return t == PyType::Bool || t == PyType::Int || t == PyType::Float;
}

double as_double(const Json& v) { return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>(); }

bool py_equal(const Json& a, const Json& b) {
  if (is_numeric(a) && is_numeric(b)) return as_double(a) == as_double(b);
  if (py_type(a) != py_type(b)) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!py_equal(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [key, value] : a.items()) {
      if (!b.contains(key) || !py_equal(value, b[key])) return false;
    }
    return true;
  }
  return a == b;
}

bool py_contains(const Json& list, const Json& value) {
  return std::any_of(list.begin(), list.end(), [&](const Json& item) { return py_equal(item, value); });
}

bool is_empty_string(const Json& v) { return v.is_string() && v.get<std::string>().empty(); }

// ---- BFCL's checker ------------------------------------------------------------------------

// Lower-case, drop spaces and ",./-_*^", single quotes become double quotes.
std::string standardize(const std::string& s) {
  static const std::string dropped = " ,./-_*^";
  std::string out;
  for (char c : s) {
    if (dropped.find(c) != std::string::npos) continue;
    c = char(std::tolower((unsigned char)c));
    out += c == '\'' ? '"' : c;
  }
  return out;
}

Json standardize_value(const Json& v) { return v.is_string() ? Json(standardize(v.get<std::string>())) : v; }

bool python_type_of(const std::string& name, PyType& out) {
  static const std::map<std::string, PyType> types = {
      {"string", PyType::Str}, {"integer", PyType::Int}, {"float", PyType::Float},
      {"boolean", PyType::Bool}, {"array", PyType::List}, {"tuple", PyType::List},
      {"dict", PyType::Dict},  {"any", PyType::Str}};
  auto found = types.find(name);
  if (found == types.end()) return false;
  out = found->second;
  return true;
}

// The python type of the first possible answer that is not "" (none if all are "").
bool possible_answer_type(const Json& possible, PyType& out) {
  for (const Json& item : possible) {
    if (!is_empty_string(item)) {
      out = py_type(item);
      return true;
    }
  }
  return false;
}

struct TypeCheck {
  bool valid = true;
  bool is_variable = false;
  std::string error;
};

TypeCheck type_check(const std::string& param, const Json& value, const Json& possible,
                     PyType expected, const PyType* nested) {
  TypeCheck result;
  PyType answer_type = PyType::None;
  bool has_answer_type = possible_answer_type(possible, answer_type);
  if (has_answer_type && answer_type != expected) result.is_variable = true;
  if (py_type(value) == expected) {
    if (!nested) return result;
    for (const Json& item : possible) {
      bool all_items_ok = true;
      if (item.is_array()) {
        for (const Json& element : value) {
          if (!type_check(param, element, item, *nested, nullptr).valid) {
            all_items_ok = false;
            break;
          }
        }
      }
      if (all_items_ok) return result;
    }
    result.valid = false;
    result.error = "Nested type checking failed for parameter '" + param + "'.";
  }
  if (has_answer_type && py_type(value) == answer_type) {
    result.valid = true;
    result.is_variable = true;
    return result;
  }
  result.valid = false;
  result.error = "Incorrect type for parameter '" + param + "'. Parameter value: " + dump_json(value) + ".";
  return result;
}

Verdict fail(std::string error) { return {false, std::move(error)}; }

Verdict dict_check(const Json& value, const Json& possible_dicts) {
  Verdict result = fail("Invalid dict value.");
  for (const Json& possible : possible_dicts) {
    if (is_empty_string(possible)) continue;
    if (!possible.is_object()) continue;
    result = {true, ""};
    for (const auto& [key, item] : value.items()) {
      if (!possible.contains(key)) { result = fail("Unexpected dict key parameter: '" + key + "'."); break; }
      Json standardized = Json::array();
      for (const Json& p : possible[key]) standardized.push_back(standardize_value(p));
      if (!py_contains(standardized, standardize_value(item))) {
        result = fail("Invalid value for dict key '" + key + "': " + dump_json(item) + ".");
        break;
      }
    }
    if (!result.valid) continue;
    for (const auto& [key, options] : possible.items()) {
      bool optional = std::any_of(options.begin(), options.end(), is_empty_string);
      if (!value.contains(key) && !optional) { result = fail("Missing dict key parameter: '" + key + "'."); break; }
    }
    if (result.valid) return result;
  }
  return result;
}

Verdict list_of_dicts_check(const Json& value, const Json& possible_lists) {
  Verdict result = fail("Wrong number of dictionaries in the list.");
  for (const Json& possible : possible_lists) {
    if (!possible.is_array() || possible.size() != value.size()) continue;
    bool all = true;
    for (size_t i = 0; i < value.size() && all; ++i) {
      result = dict_check(value[i], Json::array({possible[i]}));
      all = result.valid;
    }
    if (all) return {true, ""};
  }
  return result;
}

Verdict value_check(const std::string& param, const Json& value, const Json& possible, PyType expected,
                    const PyType* nested) {
  if (expected == PyType::Dict) return dict_check(value, possible);
  if (expected == PyType::List && nested && *nested == PyType::Dict) return list_of_dicts_check(value, possible);
  Json standardized_value = value, standardized_possible = Json::array();
  if (expected == PyType::Str || expected == PyType::List) {
    auto standardize_any = [](const Json& v) {
      if (!v.is_array()) return standardize_value(v);
      Json list = Json::array();
      for (const Json& item : v) list.push_back(standardize_value(item));
      return list;
    };
    standardized_value = standardize_any(value);
    for (const Json& p : possible) standardized_possible.push_back(standardize_any(p));
  } else {
    standardized_possible = possible;
  }
  if (py_contains(standardized_possible, standardized_value)) return {true, ""};
  return fail("Invalid value for parameter '" + param + "': " + dump_json(value) +
              ". Expected one of " + dump_json(possible) + ".");
}

const Json* find_function(const Json& functions, const std::string& name) {
  for (const Json& f : functions) {
    if (f.value("name", "") == name) return &f;
  }
  return nullptr;
}

// One call against one expected {name: {param: [possible values]}}.
Verdict check_call(const Json& functions, const ToolCall& call, const Json& expected) {
  const std::string& name = expected.begin().key();
  const Json& answers = expected.begin().value();
  const Json* doc = find_function(functions, name);
  if (!doc) return fail("Function '" + name + "' has no description.");
  if (call.name != name) return fail("Function name '" + name + "' not found in model output.");
  const Json parameters = doc->value("parameters", Json::object());
  const Json properties = parameters.value("properties", Json::object());
  for (const Json& required : parameters.value("required", Json::array())) {
    if (!call.arguments.contains(required.get<std::string>()))
      return fail("Missing required parameter: '" + required.get<std::string>() + "'.");
  }
  for (const auto& [param, raw_value] : call.arguments.items()) {
    if (!properties.contains(param) || !answers.contains(param))
      return fail("Unexpected parameter: '" + param + "'.");
    const Json& details = properties[param];
    std::string type_name = details.value("type", "any");
    PyType expected_type, nested_type;
    if (!python_type_of(type_name, expected_type)) return fail("Unknown type '" + type_name + "'.");
    const PyType* nested = nullptr;
    if ((type_name == "array" || type_name == "tuple") && details.contains("items") &&
        python_type_of(details["items"].value("type", "any"), nested_type))
      nested = &nested_type;
    Json value = raw_value;
    if (type_name == "float" && py_type(value) == PyType::Int) value = value.get<double>();
    TypeCheck typed = type_check(param, value, answers[param], expected_type, nested);
    if (!typed.valid) return fail(typed.error);
    // A value of the answers' type rather than the documented one is compared as it is.
    if (typed.is_variable) {
      if (!py_contains(answers[param], value))
        return fail("Invalid value for parameter '" + param + "': " + dump_json(value) + ".");
      continue;
    }
    Verdict verdict = value_check(param, value, answers[param], expected_type, nested);
    if (!verdict.valid) return verdict;
  }
  for (const auto& [param, options] : answers.items()) {
    bool optional = std::any_of(options.begin(), options.end(), is_empty_string);
    if (!call.arguments.contains(param) && !optional)
      return fail("Optional parameter '" + param + "' not provided and not marked as optional.");
  }
  return {true, ""};
}

int count_arguments(const Json& ground_truth) {
  std::vector<ExpectedCall> calls = expected_calls(ground_truth);
  return calls.empty() ? 0 : int(calls.front().arguments.size());
}

std::vector<Json> read_json_lines(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw Error("cannot read BFCL file '" + path + "'");
  std::vector<Json> lines;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json value = Json::parse(line, nullptr, false);
    if (value.is_discarded() || !value.is_object() || !value.contains("id") || !value["id"].is_string())
      throw Error(path + ":" + std::to_string(number) + ": not a BFCL JSON line with an \"id\"");
    lines.push_back(std::move(value));
  }
  return lines;
}

std::string category_of(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  const std::string prefix = "BFCL_v4_";
  if (base.rfind(prefix, 0) == 0) base = base.substr(prefix.size());
  return base.substr(0, base.rfind(".json"));
}

std::vector<Message> first_turn(const Json& question, const std::string& where) {
  if (!question.is_array() || question.empty() || !question[0].is_array())
    throw Error(where + ": \"question\" is not a list of turns");
  std::vector<Message> messages;
  for (const Json& m : question[0]) {
    if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
        !m["content"].is_string())
      throw Error(where + ": a message lacks role or content");
    messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return messages;
}

}  // namespace

void check_forms(const Case& c) {
  auto fail = [&](const std::string& what) { throw Error("BFCL case " + c.id + ": " + what); };
  if (!c.functions.is_array()) fail("\"function\" is not a list");
  for (const Json& f : c.functions) {
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string()) fail("a function has no name");
    if (!f.contains("parameters")) continue;
    const Json& p = f["parameters"];
    if (!p.is_object()) fail("the parameters of '" + f["name"].get<std::string>() + "' are not an object");
    if (p.contains("required") && (!p["required"].is_array() ||
                                   !std::all_of(p["required"].begin(), p["required"].end(),
                                                [](const Json& r) { return r.is_string(); })))
      fail("'required' is not a list of names");
    if (!p.contains("properties")) continue;
    if (!p["properties"].is_object()) fail("'properties' is not an object");
    for (const auto& [name, details] : p["properties"].items()) {
      if (!details.is_object() || (details.contains("type") && !details["type"].is_string()) ||
          (details.contains("items") && !details["items"].is_object()))
        fail("parameter '" + name + "' is not a schema with a type name");
    }
  }
  if (!c.ground_truth.is_array()) fail("\"ground_truth\" is not a list");
  for (const Json& call : c.ground_truth) {
    const bool one_call = call.is_object() && call.size() == 1 && call.begin().value().is_object();
    if (!one_call) fail("an expected call is not {name: {parameter: [possible values]}}");
    for (const auto& [param, options] : call.begin().value().items()) {
      if (!options.is_array()) fail("the possible values of '" + param + "' are not a list");
    }
  }
}

std::vector<Case> load_cases(const std::string& questions_path, const std::string& answers_path) {
  std::map<std::string, Json> answers;
  for (Json& line : read_json_lines(answers_path)) {
    std::string id = line["id"].get<std::string>();
    answers[id] = std::move(line["ground_truth"]);
  }
  std::vector<Case> cases;
  std::string category = category_of(questions_path);
  for (Json& line : read_json_lines(questions_path)) {
    Case c;
    c.id = line["id"].get<std::string>();
    auto answer = answers.find(c.id);
    if (answer == answers.end()) continue;
    c.category = category;
    c.messages = first_turn(line["question"], questions_path + " (" + c.id + ")");
    c.functions = std::move(line["function"]);
    c.ground_truth = answer->second;
    check_forms(c);
    c.argument_count = count_arguments(c.ground_truth);
    cases.push_back(std::move(c));
  }
  return cases;
}

const std::vector<std::string>& standard_categories() {
  static const std::vector<std::string> names = {"simple_python", "multiple", "parallel",
                                                 "parallel_multiple", "live_simple", "live_multiple"};
  return names;
}

std::vector<Case> load_standard_categories(const std::string& data_dir,
                                           const std::vector<std::string>& categories) {
  std::vector<Case> all;
  for (const std::string& category : categories) {
    std::string file = "BFCL_v4_" + category + ".json";
    std::vector<Case> cases = load_cases(data_dir + "/" + file, data_dir + "/possible_answer/" + file);
    all.insert(all.end(), std::make_move_iterator(cases.begin()), std::make_move_iterator(cases.end()));
  }
  return all;
}

std::vector<Case> sample_by_argument_count(const std::vector<Case>& cases, size_t n, uint32_t seed) {
  std::vector<std::vector<size_t>> buckets(4);
  for (size_t i = 0; i < cases.size(); ++i)
    buckets[size_t(std::clamp(cases[i].argument_count, 1, 4) - 1)].push_back(i);
  std::mt19937 rng(seed);
  for (auto& bucket : buckets) std::shuffle(bucket.begin(), bucket.end(), rng);
  // Round-robin over the buckets, so a small bucket gives its all and the rest fill up evenly.
  std::vector<size_t> chosen;
  for (size_t round = 0; chosen.size() < n; ++round) {
    bool any = false;
    for (const auto& bucket : buckets) {
      if (round < bucket.size() && chosen.size() < n) {
        chosen.push_back(bucket[round]);
        any = true;
      }
    }
    if (!any) break;
  }
  std::sort(chosen.begin(), chosen.end());
  std::vector<Case> sample;
  for (size_t i : chosen) sample.push_back(cases[i]);
  return sample;
}

Verdict check(const Case& c, const std::vector<ToolCall>& calls) {
  const Json& expected = c.ground_truth;
  if (calls.size() != expected.size()) return fail("Wrong number of functions.");
  // Each expected call takes the first unmatched model call that satisfies it (BFCL's order).
  std::vector<bool> used(calls.size(), false);
  for (const Json& answer : expected) {
    Verdict last = fail("no call");
    bool matched = false;
    for (size_t i = 0; i < calls.size() && !matched; ++i) {
      if (used[i]) continue;
      last = check_call(c.functions, calls[i], answer);
      if (last.valid) used[i] = matched = true;
    }
    if (!matched) return last;
  }
  return {true, ""};
}

std::vector<ExpectedCall> expected_calls(const Json& ground_truth) {
  std::vector<ExpectedCall> calls;
  if (!ground_truth.is_array()) return calls;
  for (const Json& call : ground_truth) {
    if (!call.is_object() || call.empty()) continue;
    ExpectedCall expected{call.begin().key(), {}};
    for (const auto& [param, options] : call.begin().value().items()) {
      if (!std::any_of(options.begin(), options.end(), is_empty_string)) expected.arguments.push_back(param);
    }
    calls.push_back(std::move(expected));
  }
  return calls;
}

namespace {

Json json_schema_of(const Json& schema) {
  if (!schema.is_object()) return schema;
  static const std::map<std::string, std::string> renamed = {
      {"dict", "object"}, {"float", "number"}, {"tuple", "array"}, {"list", "array"}};
  Json out = schema;
  if (out.contains("type") && out["type"].is_string()) {
    const std::string type = out["type"].get<std::string>();
    if (type == "any") out.erase("type");
    else if (renamed.count(type)) out["type"] = renamed.at(type);
  }
  if (out.contains("properties") && out["properties"].is_object()) {
    for (auto& [name, property] : out["properties"].items()) property = json_schema_of(property);
  }
  if (out.contains("items")) out["items"] = json_schema_of(out["items"]);
  return out;
}

}  // namespace

Json openai_tools(const Json& functions) {
  Json tools = Json::array();
  for (const Json& f : functions) {
    Json function = {{"name", f.at("name")}, {"description", f.value("description", "")},
                     {"parameters", json_schema_of(f.value("parameters", Json{{"type", "object"}}))}};
    tools.push_back({{"type", "function"}, {"function", function}});
  }
  return tools;
}

}  // namespace sw::bfcl
