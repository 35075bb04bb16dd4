// Grammar rules that enforce a schema's value keywords while decoding: a string's length,
// pattern and format, a number's bounds. They write a subset of the JSON texts of the valid
// values (the canonical ones: non-ASCII characters as UTF-8, no exponents), so every text they
// accept decodes to a value the keywords admit.
#pragma once

#include <string>

#include "engine/constraint/grammar.h"
#include "schemaweaver/tools.h"

namespace sw {

// Digits of a number's integer part (where the schema sets no upper bound) and of its fraction,
// at most: a double holds every integer up to 2^53 (16 digits) exactly and about 16 significant
// digits, and RFC 7493 asks JSON numbers to fit one. It also ends a number a model would repeat
// a digit of to max_tokens (Gemma 3 270M writes "time": 5000000...).
constexpr size_t kMaxNumberDigits = 16;
// Digits of an exponent, at most (a double's is below 309).
constexpr size_t kMaxExponentDigits = 3;

// Whether the schema has keywords string_value or number_value must enforce.
bool has_string_keywords(const Schema& schema);
bool has_number_keywords(const Schema& schema);

// A JSON string (quotes included) whose value has minLength..maxLength characters (code points)
// and matches the pattern (or format) somewhere. Throws Error when the pattern and the lengths
// together need more states than a grammar may hold. With a `raw_end`, the string is raw
// instead (a tagged syntax's): its characters as they are, no quotes, then `raw_end` - and never
// the marker's first byte inside, so that the marker cannot begin there.
Sequence string_value(GrammarBuilder& b, const Schema& schema, const std::string& raw_end = "");

// A JSON integer (schema.type Integer) or number within minimum/maximum and their exclusive
// forms. Throws Error when no value lies within the bounds.
Sequence number_value(GrammarBuilder& b, const Schema& schema);

}  // namespace sw
