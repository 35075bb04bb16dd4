// Grammars generated from tool schemas: the whole answer of a turn (one or more calls in the
// model's call format), or one argument value.
//
// Text layout is canonical, as models write JSON: ", " between items and ": " after keys.
// Arguments appear in the order the schema declares them, required ones always, optional ones
// at most once each, in declared order.
#pragma once

#include <memory>
#include <vector>

#include "format.h"
#include "grammar.h"
#include "schemaweaver/tools.h"

namespace sw {

std::shared_ptr<const Grammar> build_call_grammar(const CallFormat& format,
                                                  const std::vector<ToolSpec>& tools);
std::shared_ptr<const Grammar> build_value_grammar(const Schema& schema);

}  // namespace sw
