// What the schema layer shares between reading tool definitions (tools.cpp), checking finished
// calls (validate.cpp) and the grammars that enforce the same keywords while decoding
// (toolset/call_grammar.cpp, toolset/string_rules.cpp).
#pragma once

#include <string>

#include "schemaweaver/tools.h"

namespace sw {

// Whether `value` is of `type` (Type::Any: always; an integer is also a number).
bool has_type(const Json& value, Type type);

// Why `value` does not fit `schema` ("" if it does), naming `path`: what schema_violation checks
// for each argument of a call.
std::string value_violation(const Schema& schema, const Json& value, const std::string& path);

// The regular expression (pattern.h's subset) that a string of this `format` must match, or
// nullptr for a format that is not enforced. The expressions accept a subset of what the format
// allows (RFC 3339 dates and times with a "T" and an upper-case "Z", lower- or upper-case UUIDs,
// plain addresses): every string they accept is valid.
const char* format_pattern(const std::string& format);

// The pattern a string value must match: its `pattern`, or its `format`'s; "" if neither.
// (A schema holds at most one of them: tools.cpp refuses both.)
std::string string_pattern(const Schema& schema);

}  // namespace sw
