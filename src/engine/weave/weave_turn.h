// What the phases of one SchemaWeaver answer share (weaver.h): the conversation's cache and how
// much of its end is a guess not yet checked, the answer's text so far, the result being filled,
// and the serial decode loop that the name, optional-argument and repair phases run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/decode/decoder.h"
#include "engine/weave/plan.h"
#include "engine/toolset/tool_set.h"

namespace sw {

// What a turn gives back; its phases, events, constraint time and verification went into the
// call's stats as they happened.
struct WeaveResult {
  GenerationResult generation;  // the answer's text, its decisions and the counts of its passes
  std::vector<ToolCall> calls;  // the turn's calls, each as its final event announced it
  std::string failure;          // why the answer stopped early ("" if it did not)
  // Stopped at max_tokens while values were decoded in branches, whose text the answer does not
  // hold (an answer in a schema's values are closed and written instead).
  bool cut_in_branches = false;
};

// Whether the write-back adopts the first branch's value unchecked (WeaverOptions::adopt_first):
// never while drawing, whose choices are checked on the call's own context, every value token.
inline bool adopts_first(const CallOptions& options) {
  return options.weaver.adopt_first && !(options.sampling.temperature > 0);
}

// The arguments a call of `tool` decodes in branches: the required ones, or the caller's set.
std::vector<const Property*> branch_arguments(const ToolSpec& tool, const CallOptions& options);

struct WeaveTurn {
  WeaveTurn(Context& conversation, const LoadedModel& loaded, const CompiledToolSet& tool_set,
            const CallOptions& call_options, Planning planning, CallTracker& call_tracker,
            Drafter* value_drafter, Chooser& call_chooser, CallStats& call_stats);

  Context& context;
  const LoadedModel& model;
  const CompiledToolSet& tools;
  const CallOptions& options;
  const CostCurve* const curve;  // for the plan, padding and drafts (null: no pass cost known yet)
  CallHistory& history;          // the session's earlier calls, for the plan
  CallTracker& tracker;
  Drafter* const drafter;        // drafts in the values passes (WeaverOptions::drafts), or null
  Chooser& chooser;              // the serial phases' and the verifier's choices (greedy, or drawn)
  const size_t prompt_size;      // the conversation's length before the answer
  CallStats& stats;              // the call's: phases, events, constraint time, verification

  std::string text;              // the answer decided so far
  size_t call_start = 0;         // where the current call starts in `text`
  std::shared_ptr<const Skeleton> skeleton;  // of the current call (its branches point into it)
  int redecided = 0;             // picks of the branches that the answer does not keep
  bool guessed = false;          // the current call's start was guessed at the last write-back
  bool guess_failed = false;     // a guess of this turn was not taken
  WeaveResult result;

  // max_tokens counts the answer's tokens that the model chose, as the serial modes count them:
  // not the choices a verification threw away or leaves to the reference to make again.
  int budget() const { return options.max_tokens - (result.generation.sampled_tokens - redecided); }
  bool adopts_first() const { return sw::adopts_first(options); }
  // The decided text that is not yet in the conversation's cache.
  std::string pending() const;
  // The size of the answer's text that the conversation's first `length` tokens hold.
  size_t cached_text_size(size_t length) const;
  // The phase's stats; count() adds a pass counter's passes and the time since `started`.
  PhaseStats& phase(const std::string& name);
  void count(const std::string& name, const PassCounter& passes, Clock::time_point started);
  // Decided text that the serial loop did not write (it is fed to the call tracker).
  void add_text(const std::string& more);
  // Runs the serial decode loop (jump-forward) over `grammar`, whose text starts with what is
  // pending. Returns whether the grammar was completed (else result.failure says why).
  bool serial(const std::string& name, std::shared_ptr<const Grammar> grammar, const std::string& pending_text);
  // The same with a jump-forward `strategy` that starts where the cache's text ends, followed
  // by `pending_text`; a `phase_drafter` offers drafts.
  bool serial(const std::string& name, std::unique_ptr<Strategy> strategy, const std::string& pending_text,
              Drafter* phase_drafter = nullptr);
  // Keeps the leading tokens of a guess in the cache that equal `tokens`, text that the answer
  // holds here whatever the model's logits say, and removes the rest of the guess. Returns how
  // many were kept.
  size_t keep_guess(const std::vector<llama_token>& tokens);

  std::vector<const Property*> branch_arguments(const ToolSpec& tool) const { return sw::branch_arguments(tool, options); }
  // Whether optional arguments are decided after the branches: not when the caller gave the
  // argument set.
  OptionalArguments optional_arguments() const {
    return options.given_arguments.empty() ? OptionalArguments::Follow : OptionalArguments::Omitted;
  }
};

}  // namespace sw
