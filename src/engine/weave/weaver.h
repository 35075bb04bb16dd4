// SchemaWeaver: a turn of tool calls decoded with the schema's help.
//
// For each call: the tool name is decoded under a constraint to the known names until it is
// unique (or taken from the caller); the skeleton (the call's head, and one branch per
// required argument holding that argument's name) is prefilled in one pass, the branches
// sharing the head's cells; all values are decoded together, one pick (and the text its grammar
// forces after it) per unfinished branch per pass, each under its own type constraint; the
// call is assembled and emitted, then written back into the conversation in one pass; optional
// arguments and the end of the call are decided last, by the serial decode loop. Several calls in a turn repeat this.
//
// With drafts, each pass also carries a guess of how each unfinished value goes on (prompt
// lookup over the conversation and the branch: values mostly copy the user's words or the
// tools' enum members); the branch takes the leading draft tokens that its constrained greedy
// choice agrees with, so the values are the same as without drafts, in fewer passes.
//
// The rooms: weave_turn.h (what the phases share), values_phase.h (skeleton and values),
// write_back.h (assembly and the pass), verifier.h (the check against jump-forward); this
// file's driver runs them per call.
#pragma once

#include <map>
#include <optional>

#include "engine/weave/weave_turn.h"

namespace sw {

// Where the plan prices every tool's call serially (a machine whose wide passes cost about what
// their tokens do one by one), the turn gains nothing from the weaver's phases: the plan of each
// tool, for the serial decode loop to run the turn as jump-forward does - one decoder, not a
// name phase and a call phase per call. nullopt where a call may go into branches, where the
// caller fixed the plan (WeaverOptions::plan_by_cost, parallel_values, given arguments, a
// turn's guesses) or no pass cost is known yet.
std::optional<std::map<std::string, PlanStats>> serial_plans(const LoadedModel& model, const CompiledToolSet& tools,
                                                            const CallOptions& options, Planning planning);

// How many tokens a call's values took, for the plans of the session's later calls.
void remember_values(const LoadedModel& model, CallHistory& history, const ToolCall& call);

// `planning` prices each call's plan, padding and drafts. Times are taken from
// tracker.origin(), which the tracker also uses for the closing of each call. With a
// `drafter` (WeaverOptions::drafts), every values pass also checks drafts of the branches.
// The turn's phases, events, constraint time and verification are recorded in `stats`. The
// serial phases and the verifier choose by `chooser`; the branches' values, drafts, greedily.
WeaveResult weave(Context& context, const LoadedModel& model, const CompiledToolSet& tools,
                  const CallOptions& options, Planning planning, CallTracker& tracker, Drafter* drafter,
                  Chooser& chooser, CallStats& stats);

}  // namespace sw
