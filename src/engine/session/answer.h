// One call's answer after its prompt (and thinking): under tool_choice auto, whether it is a call
// or text; then the text, or the calls in the call's mode (the weaver, or the one serial decode
// loop); the calls judged once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/decode/call_deltas.h"
#include "engine/decode/call_events.h"
#include "engine/decode/decoder.h"
#include "engine/weave/plan.h"
#include "engine/toolset/tool_set.h"

namespace sw {

// A generation's counts added to the call's (its passes, forced passes, sampled and draft tokens).
void count_generation(CallStats& stats, const GenerationResult& generated);

class Answer {
 public:
  // The answer after the `prefilled` prompt in `context`: `planning` prices the weaver's plans,
  // padding and drafts, `drafter` offers drafts (speculative, weaver drafts), `chooser` makes
  // the model's choices.
  Answer(Context& context, const LoadedModel& model, const CompiledToolSet& tools, const CallOptions& options,
         Planning planning, Drafter* drafter, Chooser& chooser, Clock::time_point prefilled, CallResult& result);

  // A reply in text (tool_choice none) whose beginning opens no call (TextOpening): the answer
  // that replaces calls repeating answered ones. Before decode().
  void keep_reply_from_calls() { reply_opens_no_call_ = true; }
  // Decodes the answer; the stats of its passes and its decisions into the result.
  void decode();
  // Whether the model chose not to call where its reply is to be one object of
  // CallOptions::answer_schema: the opening is thrown away, the context back at the prompt.
  bool declined_call() const { return declined_; }
  // The answer's calls, or why it has none that stand (CallResult::error).
  void judge(const std::vector<ToolSpec>& all_tools);

 private:
  double since_prefill() const { return ms_between(prefilled_, Clock::now()); }
  // Tells the decided text of calls as it comes: each call's deltas (CallOptions::on_call_delta),
  // or an answer in a schema's text, its content (CallOptions::on_text).
  void tell_decided_text();
  // Under auto the answer begins freely: a reply in text goes on as it began; at the beginning
  // of a call the text is thrown away and the call decoded in the mode, from the prompt's
  // logits - as is a reply's beginning where the reply is to be an answer_schema's object.
  // Returns the decision between the two where the text was thrown away.
  std::optional<Decision> open();
  // A call the model began as JSON outside its format's markers (decode/opening.h) is decoded in
  // that form (CompiledToolSet::opened_as), in every mode but free. `opening`: the probe's text.
  void write_as_opened(const std::string& opening);
  // A free answer by `strategy` (a reply, or the opening probe's); once `is_text` says it is a
  // reply in text, its text is told to CallOptions::on_text as it is decided and ends before the
  // first of CallOptions::stop it writes.
  GenerationResult reply(Strategy& strategy, std::function<bool()> is_text);
  // The serial modes: free, or the one decode loop under the calls' grammar (SchemaWeaver's too,
  // where its plan put every call in serial passes).
  void decode_serially();
  // An answer in a schema cut off at max_tokens ends with the fewest bytes its grammar allows
  // after it (strings, arrays and objects closed, each missing value its shortest), so that it
  // stays one valid object; CallResult::stopped_at_max_tokens still says it was cut. Not a
  // call: a cut value must not be executed. The weaver cut inside its branches has ended their
  // values so already and written them (else closing would drop them).
  void close_cut_object();
  // The weaver's calls are those its final events announced, where its turn completed. Every
  // other answer is read from its text: a turn cut off at max_tokens keeps the calls it
  // completed and a call it cut off fails the parse, in every mode (the same text, the same
  // answer); free text, which no grammar held to the tools' schemas, is checked against them.
  std::vector<ToolCall> calls(const std::vector<ToolSpec>& all_tools) const;

  Context& context_;
  const LoadedModel& model_;
  const CompiledToolSet* tools_;                   // the call's set, or opened_
  std::shared_ptr<const CompiledToolSet> opened_;  // the set in the form the model opened its call
  const CallOptions& options_;
  const Planning planning_;
  Drafter* const drafter_;
  Chooser& chooser_;
  const Clock::time_point prefilled_;
  CallResult& result_;
  CallStats& stats_;
  CallTracker tracker_;
  SerialCallEvents serial_events_;
  std::optional<CallDeltas> deltas_;
  std::string decided_;  // an answer in a schema's text, as told to on_text
  bool reply_opens_no_call_ = false;
  size_t told_ = 0;      // of decided_, in whole UTF-8 characters
  GenerationResult generated_;
  std::vector<ToolCall> woven_calls_;
  std::string failure_;  // why the weaver's turn stopped early
  bool cut_in_branches_ = false;  // the weaver's turn stopped at max_tokens inside its branches
  // SchemaWeaver's plan of each tool where it put every call serially (serial_plans): the turn
  // is then decoded by the serial loop.
  std::optional<std::map<std::string, PlanStats>> serial_plans_;
  bool declined_ = false;
};

}  // namespace sw
