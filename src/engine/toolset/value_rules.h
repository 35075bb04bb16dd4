// Grammar rules that enforce a schema's value keywords while decoding: a string's length,
// pattern and format, a number's bounds. They write a subset of the JSON texts of the valid
// values (the canonical ones: non-ASCII characters as UTF-8, no exponents), so every text they
// accept decodes to a value the keywords admit.
#pragma once

#include "engine/constraint/grammar.h"
#include "schemaweaver/tools.h"

namespace sw {

// Whether the schema has keywords string_value or number_value must enforce.
bool has_string_keywords(const Schema& schema);
bool has_number_keywords(const Schema& schema);

// A JSON string (quotes included) whose value has minLength..maxLength characters (code points)
// and matches the pattern (or format) somewhere. Throws Error when the pattern and the lengths
// together need more states than a grammar may hold.
Sequence string_value(GrammarBuilder& b, const Schema& schema);

// A JSON integer (schema.type Integer) or number within minimum/maximum and their exclusive
// forms. Throws Error when no value lies within the bounds.
Sequence number_value(GrammarBuilder& b, const Schema& schema);

}  // namespace sw
