#include "engine/schema/schema.h"

#include <map>

namespace sw {
namespace {

// RFC 3339 pieces. A year from 0001; the days each month has, and 29 February in leap years
// only (divisible by 4, centuries only when divisible by 400).
#define SW_YEAR "([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
#define SW_MONTH_DAY \
  "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
#define SW_LEAP_YEAR "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
#define SW_DATE "(" SW_YEAR "-" SW_MONTH_DAY "|" SW_LEAP_YEAR "-02-29)"
#define SW_TIME "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
#define SW_URI_CHAR "([A-Za-z0-9._~:/?@!$&'()*+,;=-]|%[0-9A-Fa-f]{2})"

}  // namespace

bool has_type(const Json& value, Type type) {
  switch (type) {
    case Type::Any: return true;
    case Type::String: return value.is_string();
    case Type::Integer: return value.is_number_integer();
    case Type::Number: return value.is_number();
    case Type::Boolean: return value.is_boolean();
    case Type::Null: return value.is_null();
    case Type::Array: return value.is_array();
    case Type::Object: return value.is_object();
  }
  return false;
}

const char* format_pattern(const std::string& format) {
  static const std::map<std::string, const char*> patterns = {
      {"date", "^" SW_DATE "$"},
      {"time", "^" SW_TIME "$"},
      {"date-time", "^" SW_DATE "T" SW_TIME "$"},
      {"uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"},
      {"email", "^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$"},
      {"ipv4", "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"},
      {"uri", "^[A-Za-z][A-Za-z0-9+.-]*:" SW_URI_CHAR "+(#" SW_URI_CHAR "*)?$"},
  };
  auto found = patterns.find(format);
  return found == patterns.end() ? nullptr : found->second;
}

std::string string_pattern(const Schema& schema) {
  if (schema.checks.contains("pattern")) return schema.checks["pattern"].get<std::string>();
  const char* format = schema.checks.contains("format") ? format_pattern(schema.checks["format"].get<std::string>()) : nullptr;
  return format ? format : "";
}

}  // namespace sw
