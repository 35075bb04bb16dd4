// Grammars generated from tool schemas: the whole answer of a turn (one or more calls in the
// model's call format), one argument value, and the serial pieces of a SchemaWeaver call.
//
// Text layout is canonical, as models write JSON: ", " between items and ": " after keys; a
// call's own arguments are laid out by its format (ArgumentSyntax: a JSON object or tagged).
// Members of an object appear in the reference order: the required ones first, always, in the
// order the schema declares them, then the optional ones, each at most once, in declared order.
// Every mode writes this order, SchemaWeaver included (its branches are the required arguments,
// its serial tail the optional ones), so that the serial modes are its reference.
#pragma once

#include <memory>
#include <vector>

#include "engine/constraint/grammar.h"
#include "engine/format/format.h"
#include "schemaweaver/tools.h"

namespace sw {

// `declared` in the reference order.
std::vector<Property> reference_order(const std::vector<Property>& declared);

// max_calls: the calls of the turn at most (0: any number).
std::shared_ptr<const Grammar> build_call_grammar(const CallFormat& format,
                                                  const std::vector<ToolSpec>& tools, int max_calls = 0);
// One argument value, after `prefix` (text the skeleton left to the value, such as a space), as
// `syntax` writes it (a tagged value with its end marker).
std::shared_ptr<const Grammar> build_value_grammar(const Schema& schema, const std::string& prefix = "",
                                                   const ArgumentSyntax& syntax = ArgumentSyntax());

// How the rest of a call may go on, in SchemaWeaver's tail and reference grammars: whether the
// tool's optional arguments may follow (not where the caller gave the argument set), whether
// members are written already (the object goes on after them), whether another call may follow
// in the turn.
enum class OptionalArguments { Omitted, Follow };
enum class Members { NoneYet, Written };
enum class NextCall { Allowed, Forbidden };

// SchemaWeaver's serial pieces. The head: `prefix` (the format's opener or the text pending
// before a call), then the format's name prefix, one of the tools' names and its name suffix.
std::shared_ptr<const Grammar> build_head_grammar(const std::string& prefix, const CallFormat& format,
                                                  const std::vector<ToolSpec>& tools);
// The tail of a call: `prefix`, the arguments' remaining `optional` members (each at most
// once, in order) and their close - or, if no member is written yet, all the arguments - then
// the format's call suffix and closer, or (where another call is allowed and the format writes
// more than one a turn) its separator before another. `free_form`: the tool's
// ToolSpec::free_form_arguments, whose object is written whole (members NoneYet).
std::shared_ptr<const Grammar> build_tail_grammar(const std::string& prefix, const CallFormat& format,
                                                  const std::vector<Property>& optional, Members members,
                                                  NextCall next, const Schema* free_form = nullptr);

}  // namespace sw
