// Session: a call checked and prefilled, its thinking, its answer decoded in the mode, its calls
// judged; the prompt cache and the prompt state around it.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <optional>

#include "engine/decode/decoder.h"
#include "engine/decode/drafter.h"
#include "engine/measure/pass_costs.h"
#include "engine/model/context.h"
#include "engine/model/model.h"
#include "engine/persist/prompt_cache.h"
#include "engine/persist/prompt_state.h"
#include "engine/session/answer.h"
#include "engine/session/prompt.h"
#include "engine/session/repeats.h"
#include "engine/toolset/tool_set.h"
#include "schemaweaver/engine.h"

namespace sw {
namespace {

long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// What the model reasoned in its thinking block `written`: the text between the block's opener
// and its end marker, as llama.cpp's parser reads it (the whitespace it begins with taken as the
// opener's where the parser does so; the newline the close begins with stays).
std::string reasoning_of(const llama_chat::ReasoningBlock& block, const std::string& written) {
  size_t from = written.compare(0, block.opener.size(), block.opener) == 0 ? block.opener.size() : 0;
  const size_t end = std::min(written.size(), written.rfind(block.end));
  while (!block.keeps_leading_space && from < end && std::isspace((unsigned char)written[from])) ++from;
  const size_t to = std::max(from, end);
  return written.substr(from, to - from);
}

// Whether an answer begins with a thinking block: the call asks for one (thinking_budget), or
// the template opens it whatever is asked (then closed at once).
bool thinks(const LoadedModel& model, const CallOptions& options) {
  return options.thinking_budget > 0 || model.reasoning.always_open;
}

// The thinking block, if the call asks for it (CallOptions::thinking_budget): the block and its
// reasoning into `result` (and its phase into the stats), its generation returned.
GenerationResult think(Context& context, const LoadedModel& model, const CallOptions& options, Chooser& chooser,
                       CallResult& result) {
  if (!thinks(model, options)) return {};
  const auto started = Clock::now();
  std::unique_ptr<Strategy> thinking = make_thinking(model, options.thinking_budget, chooser);
  GenerationResult thought = generate(context, model, *thinking, options.thinking_budget + 1, nullptr);
  result.stats.phases.push_back({"thinking", thought.passes.passes, thought.passes.tokens, ms_between(started, Clock::now())});
  result.thinking_text = thought.text;
  result.reasoning = reasoning_of(model.reasoning, thought.text);
  if (options.on_reasoning && options.thinking_budget > 0) options.on_reasoning(result.reasoning);
  return thought;
}

// A prefix shorter than this is cheaper to compute than to read back.
constexpr size_t kMinCachedPrefix = 32;

}  // namespace

class SessionState {
 public:
  std::shared_ptr<const Model> model;
  Context context;
  PassCosts pass_costs;  // learnt from every pass, starting from those kept by earlier runs
  CallHistory history;   // what the session's calls showed, for SchemaWeaver's plans
  CallStats* answering = nullptr;  // the stats of the answer being decoded: its passes by width
  // Speculative decoding with a draft model: its context follows the conversation across calls.
  std::shared_ptr<const Model> draft_model;
  std::unique_ptr<Context> draft_context;
  PassCosts draft_pass_costs;
  size_t prompt_length = 0;  // of the last call
  std::optional<PromptCache> prompt_cache;  // tool-set prefixes on disk, if used
  std::string model_identity;               // of the model file, for the prompt cache

  explicit SessionState(std::shared_ptr<const Model> m)
      : model(std::move(m)), context(loaded(*model), loaded(*model).params.context_size),
        pass_costs(kept_pass_costs(loaded(*model))) {
    context.observe_passes([this](int tokens, int rows, double ms) {
      pass_costs.record(tokens, ms, rows);
      if (!answering) return;
      answering->passes_by_tokens[tokens] += 1;
      answering->extra_kept_rows += std::max(rows - 1, 0);
      answering->pass_ms += ms;
    });
  }

  // Drafts for a call whose passes cost `curve` (null: not known yet).
  std::unique_ptr<Drafter> drafter_for(const CallOptions& options, const CostCurve* curve) {
    if (!options.draft_model) return std::make_unique<PromptLookup>(curve);
    const LoadedModel& draft = loaded(*options.draft_model);
    if (draft_model != options.draft_model) {
      require_same_vocabulary(loaded(*model), draft);
      if (draft.params.vocab_only) throw Error("a draft model loaded with vocab_only cannot draft");
      draft_context = std::make_unique<Context>(draft, context.size());
      draft_pass_costs = kept_pass_costs(draft);
      draft_context->observe_passes(
          [this](int tokens, int rows, double ms) { draft_pass_costs.record(tokens, ms, rows); });
      draft_model = options.draft_model;
    }
    // Until a pass of the draft model has been seen, its drafts are taken to cost nothing.
    const CostCurve draft_costs = draft_pass_costs.estimate();
    return std::make_unique<ModelDraft>(curve, draft, *draft_context, draft_costs.ms.empty() ? 0.0 : draft_costs.cost(1));
  }

  ~SessionState() { keep_costs(); }

  // The estimates kept for the next run, outside a call's measured time: after a session's first
  // call, then at most once a minute (a server's calls write no file each), and when it ends.
  void keep_costs_when_due() {
    const auto now = std::chrono::steady_clock::now();
    if (kept_at && now - *kept_at < std::chrono::minutes(1)) return;
    keep_costs();
    kept_at = now;
  }

 private:
  std::optional<std::chrono::steady_clock::time_point> kept_at;

  void keep_costs() {
    keep_pass_costs(loaded(*model), pass_costs);
    if (draft_model) keep_pass_costs(loaded(*draft_model), draft_pass_costs);
  }
};

Session::Session(std::shared_ptr<const Model> model) : state_(std::make_unique<SessionState>(std::move(model))) {
  if (loaded(*state_->model).params.vocab_only) throw Error("a model loaded with vocab_only cannot run a session");
}
Session::~Session() = default;

namespace {

constexpr const char* kSchemaNotFree =
    "an answer in a schema is decoded under the schema's grammar: the free mode writes what the model chooses";
constexpr const char* kNoLogprobsInSchema =
    "logprobs are given for a reply in text: an answer in a schema writes the tokens its grammar forces without "
    "weighing them";

// An answer in a schema (compile_schema) is its one object, decoded under its grammar.
void check_schema_answer(const CallOptions& options) {
  if (options.mode == DecodeMode::Free)
    throw Error(kSchemaNotFree);
  if (options.tool_choice != ToolChoice::Required)
    throw Error("an answer in a schema is its object: tool_choice auto and none choose between calls and text");
  if (!options.tool.empty()) throw Error("an answer in a schema has no tool to choose");
  // Nor a list of calls: CallFormat::as_list refuses that.
}

// A schema for the reply of a call under auto (CallOptions::answer_schema): a schema's set for
// the same model, beside tools.
void check_answer_schema(const CallOptions& options, const CompiledToolSet& tools,
                         const std::shared_ptr<const Model>& model) {
  const CompiledToolSet& schema = compiled(*options.answer_schema);
  if (schema.format().named) throw Error("answer_schema must be a response schema's set (compile_schema)");
  if (schema.model_handle() != model) throw Error("the answer schema was compiled for another model");
  if (options.tool_choice != ToolChoice::Auto)
    throw Error("an answer schema is for tool_choice auto: under none call with the schema's own set, under "
                "required the answer is a call");
  if (!tools.format().named || tools.tools().empty())
    throw Error("an answer schema goes beside tools (without them, call with the schema's own set)");
  if (options.answer_instead_of_repeating)
    throw Error("answer_instead_of_repeating answers in text, not in an answer schema: leave one of them out");
  if (options.mode == DecodeMode::Free)
    throw Error(kSchemaNotFree);
  if (options.logprobs >= 0)
    throw Error(kNoLogprobsInSchema);
}

// The options of a reply in CallOptions::answer_schema's object: the schema's one answer, told
// as content, never as calls.
CallOptions schema_reply_options(const CallOptions& options) {
  CallOptions in_schema = options;
  in_schema.tool_choice = ToolChoice::Required;
  in_schema.answer_schema = nullptr;
  in_schema.tool.clear();
  in_schema.given_arguments.clear();
  in_schema.calls_as_list = false;
  in_schema.on_call = nullptr;
  in_schema.on_call_delta = nullptr;
  return in_schema;
}

// The tools a call may use: all, or the one the caller chose, written as a list if the caller
// asked (the set held by `chosen`). A call that may be a reply in text may go without tools.
const CompiledToolSet& usable_tools(const CompiledToolSet& tools, const CallOptions& options,
                                    std::shared_ptr<const CompiledToolSet>& chosen) {
  if (!tools.format().named) check_schema_answer(options);
  if (tools.tools().empty() && options.tool_choice == ToolChoice::Required) throw Error("no tools given");
  if (options.tool.empty()) {
    if (!options.given_arguments.empty()) throw Error("given arguments need the tool they belong to");
  } else {
    chosen = tools.only(options.tool);
    for (const std::string& name : options.given_arguments) {
      if (!chosen->tools().front().find_argument(name))
        throw Error("tool '" + options.tool + "' has no argument '" + name + "'");
    }
  }
  if (options.calls_as_list) chosen = (chosen ? *chosen : tools).as_list();
  return chosen ? *chosen : tools;
}

// A call's inputs, checked: the tools it may use and its prompt's tokens.
struct Prepared {
  std::shared_ptr<const CompiledToolSet> chosen;  // the set of the tool the caller chose or the list form, if either
  const CompiledToolSet* tools = nullptr;
  ShownTools shown;
  std::vector<llama_token> prompt;
};

Prepared prepare(const SessionState& state, const std::vector<Message>& messages, const ToolSet& all,
                 const CallOptions& options) {
  const LoadedModel& model = loaded(*state.model);
  const CompiledToolSet& all_tools = compiled(all);
  if (all_tools.model_handle() != state.model) throw Error("the tool set was compiled for another model");
  Prepared p;
  p.tools = &usable_tools(all_tools, options, p.chosen);
  if (options.answer_schema) check_answer_schema(options, *p.tools, state.model);
  if (messages.empty()) throw Error("no messages given");
  if (options.max_tokens <= 0) throw Error("max_tokens must be positive");
  if (options.max_calls < 0) throw Error("max_calls must be 0 (any number) or positive");
  if (options.mode != DecodeMode::SchemaWeaver && !options.given_arguments.empty())
    throw Error("given arguments are a SchemaWeaver option");
  if (options.draft_model && options.mode != DecodeMode::Speculative)
    throw Error("a draft model is an option of the speculative mode");
  if (options.calls_as_list && options.mode == DecodeMode::Free)
    throw Error("calls as a list are written under a grammar: the free mode writes what the model chooses");
  // A schema's answer shows no tools: its one "tool" is the schema, which the messages ask for.
  static const std::vector<ToolSpec> no_tools;
  p.shown = shown_tools(
      model, all_tools.format().named ? all_tools.tools() : no_tools, [&all_tools](const std::string& user_system) { return *all_tools.system_prompt(user_system); },
      options);
  Chooser::check(options.sampling);
  if (options.logprobs < -1 || options.logprobs > 20) throw Error("logprobs must be -1 (none) or from 0 to 20");
  if (options.logprobs >= 0 && !all_tools.format().named)
    throw Error(kNoLogprobsInSchema);
  for (const std::string& s : options.stop) {
    if (s.empty()) throw Error("a stop string is empty");
  }
  if (options.thinking_budget < 0) throw Error("thinking_budget must be 0 (thinking off) or positive");
  if (options.thinking_budget > 0 && model.reasoning.end.empty())
    throw Error("the model's chat template has no thinking block (thinking_budget needs one)");
  p.prompt = model.tokenize(render(model, messages, p.shown), true);
  const int thinking = thinks(model, options)
                           ? options.thinking_budget +
                                 int(model.tokenize(model.reasoning.opener + model.reasoning.close, false).size())
                           : 0;
  const int context_size = state.context.size();
  if (int(p.prompt.size()) + thinking + options.max_tokens > context_size)
    throw Error("the prompt has " + std::to_string(p.prompt.size()) + " tokens; with max_tokens " +
                std::to_string(options.max_tokens) + (thinking ? " and the thinking budget" : "") +
                " it exceeds the context of " + std::to_string(context_size) + " tokens");
  return p;
}

// With a prompt cache: restores the call's tool-set prefix from disk when the KV cache lacks
// it. Returns the prefix when the disk lacks it too (save_tool_prefix keeps it once computed).
std::vector<llama_token> restore_tool_prefix(SessionState& state, const std::vector<Message>& messages,
                                             const Prepared& prepared, CallStats& stats) {
  if (!state.prompt_cache || !prepared.shown.tools) return {};
  const std::vector<llama_token>& prompt = prepared.prompt;
  const size_t length = tool_prefix_length(loaded(*state.model), messages, prepared.shown, prompt);
  if (length < kMinCachedPrefix || state.context.shared_prefix(prompt) >= length) return {};
  std::vector<llama_token> prefix(prompt.begin(), prompt.begin() + long(length));
  std::optional<PromptState> saved = state.prompt_cache->find(state.model_identity, prefix);
  if (!saved || !state.context.restore(saved->tokens, saved->cells)) return prefix;
  stats.prompt_restored_tokens = int(length);
  return {};
}

void save_tool_prefix(SessionState& state, std::vector<llama_token> prefix, CallStats& stats) {
  if (prefix.empty()) return;
  const size_t length = prefix.size();
  state.prompt_cache->store(PromptState{state.model_identity, std::move(prefix), state.context.save(length)});
  stats.prompt_cache_stored_tokens = int(length);
}

}  // namespace

int Session::check(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools,
                   const CallOptions& options) const {
  return check(messages, *CompiledToolSet::compile(state_->model, tools), options);
}

int Session::check(const std::vector<Message>& messages, const ToolSet& tools, const CallOptions& options) const {
  return int(prepare(*state_, messages, tools, options).prompt.size());
}

void Session::use_pass_costs(std::vector<double> ms, double ms_per_kept_row) {
  if (ms.empty()) throw Error("a pass-cost curve needs the time of at least a pass of one token");
  for (double t : ms) {
    if (!(t > 0)) throw Error("a pass-cost curve holds a time that is not positive");
  }
  if (!(ms_per_kept_row >= 0)) throw Error("the cost of a kept row of logits cannot be negative");
  CostCurve curve{std::move(ms)};
  curve.rows_ms = rows_curve(ms_per_kept_row);
  state_->pass_costs.pin(std::move(curve));
}

void Session::save_prompt_state(const std::string& path) {
  if (state_->prompt_length == 0) throw Error("no prompt state to save: no call was made");
  Context& context = state_->context;
  const size_t length = std::min(state_->prompt_length, context.history().size());
  PromptState state;
  state.model = model_identity(loaded(*state_->model).params.path);
  state.tokens.assign(context.history().begin(), context.history().begin() + long(length));
  state.cells = context.save(length);
  write_prompt_state(path, state);
}

void Session::use_prompt_cache(const std::string& dir, uint64_t max_bytes) {
  state_->prompt_cache.emplace(dir, max_bytes);
  state_->model_identity = model_identity(loaded(*state_->model).params.path);
}

int Session::restore_prompt_state(const std::string& path) {
  std::optional<PromptState> state = read_prompt_state(path);
  if (!state || state->model != model_identity(loaded(*state_->model).params.path)) return 0;
  return state_->context.restore(state->tokens, state->cells) ? int(state->tokens.size()) : 0;
}

CallResult Session::call(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools,
                         const CallOptions& options) {
  const double before = compile_clock_ms();
  auto compiled = CompiledToolSet::compile(state_->model, tools);
  const double compiling = compile_clock_ms() - before;
  CallResult result = call(messages, *compiled, options);
  result.stats.compile_ms += compiling;
  return result;
}

CallResult Session::call(const std::vector<Message>& messages, const ToolSet& all_tools, const CallOptions& options) {
  const double compiled_before = compile_clock_ms();
  Chooser chooser(options.sampling);
  const LoadedModel& model = loaded(*state_->model);
  Context& context = state_->context;
  const Prepared prepared = prepare(*state_, messages, all_tools, options);
  const bool drafting =
      options.mode == DecodeMode::Speculative || (options.mode == DecodeMode::SchemaWeaver && options.weaver.drafts);
  // Every pass first asks whether the caller still wants the answer.
  context.set_interrupt(options.cancelled);
  struct Reset {
    Context& context;
    ~Reset() { context.set_interrupt(nullptr); }
  } reset{context};
  // Plans, padding and drafts are priced by what passes cost now, as learnt so far.
  const CostCurve costs = state_->pass_costs.estimate();
  const CostCurve* curve = !costs.ms.empty() ? &costs : nullptr;
  std::unique_ptr<Drafter> drafter = drafting ? state_->drafter_for(options, curve) : nullptr;

  CallResult result;
  CallStats& s = result.stats;
  struct Recording {
    CallStats*& answering;
    ~Recording() { answering = nullptr; }
  } recording{state_->answering};
  PassCounter prompt_passes;
  const auto started = Clock::now();
  std::vector<llama_token> uncached_prefix = restore_tool_prefix(*state_, messages, prepared, s);
  s.prompt_reused_tokens = context.start_from(prepared.prompt, prompt_passes);
  s.prompt_tokens = int(prepared.prompt.size());
  s.prompt_passes = prompt_passes.passes;
  state_->prompt_length = prepared.prompt.size();
  const auto prefilled = Clock::now();
  s.prompt_ms = ms_between(started, prefilled);
  state_->answering = &s;
  // The model's thinking comes first, free in every mode; the answer follows the block.
  count_generation(s, think(context, model, options, chooser, result));
  // A draft model reads the prompt (and the thinking) too, before the answer starts.
  PassCounter draft_passes;
  if (options.draft_model) state_->draft_context->start_from(context.history(), draft_passes);
  // Where the answer may be decoded again as text (answer_instead_of_repeating), the calls are
  // told once they stand, and the prompt's logits are kept to begin again from.
  const bool may_answer_instead = options.answer_instead_of_repeating && options.tool_choice == ToolChoice::Auto;
  HeldCalls held;
  const CallOptions answer_options = may_answer_instead ? held.holding(options) : options;
  const size_t answer_start = size_t(context.used());
  std::vector<float> prompt_logits;
  if (may_answer_instead) prompt_logits.assign(context.last_logits(), context.last_logits() + model.vocab_size());
  Answer answer(context, model, *prepared.tools, answer_options, Planning{curve, state_->history}, drafter.get(),
                chooser, prefilled, result);
  answer.decode();
  // The model chose not to call: its answer is the schema's object, decoded from the prompt.
  std::optional<Answer> in_schema;
  const CallOptions in_schema_options = answer.declined_call() ? schema_reply_options(options) : CallOptions{};
  if (answer.declined_call()) {
    in_schema.emplace(context, model, compiled(*options.answer_schema), in_schema_options,
                      Planning{curve, state_->history}, drafter.get(), chooser, prefilled, result);
    in_schema->decode();
  }
  save_tool_prefix(*state_, std::move(uncached_prefix), s);
  state_->keep_costs_when_due();
  s.peak_rss_kb = peak_rss_kb();
  s.compile_ms = compile_clock_ms() - compiled_before;
  if (in_schema) in_schema->judge(options.answer_schema->tools());
  else answer.judge(all_tools.tools());
  s.repeated_calls = repeated_calls(messages, result.calls);
  if (!may_answer_instead) return result;
  if (result.calls.empty() || s.repeated_calls < int(result.calls.size())) {
    held.release(options);
    return result;
  }
  // Every call repeats an answered one: the answer is a reply in text, from the prompt again.
  context.rewind(answer_start, std::move(prompt_logits));
  result.calls.clear(), result.text.clear(), result.error.clear(), result.logprobs.clear();
  s.events.clear(), s.decisions.clear(), s.plans.clear();
  result.answered_instead_of_repeating = true;
  CallOptions text_options = options;
  text_options.tool_choice = ToolChoice::None;
  Answer reply(context, model, *prepared.tools, text_options, Planning{curve, state_->history}, drafter.get(), chooser,
               prefilled, result);
  reply.keep_reply_from_calls();
  reply.decode();
  reply.judge(all_tools.tools());
  return result;
}

}  // namespace sw
