// schemaweaver/engine.h - load a GGUF model and generate tool calls with it.
//
//   auto model = sw::Model::load({"/path/model.gguf"});
//   auto tools = sw::compile_tools(model, sw::parse_tools(sw::Json::parse(tools_text)));
//   sw::Session session(model);
//   sw::CallResult r = session.call({{"user", "Weather in Paris?"}}, *tools, {});
//   if (r.error.empty()) use(r.calls);   // r.stats: passes, tokens, times, peak RSS
//
// The pipeline: a loaded Model -> a ToolSet compiled for it (grammars, skeletons) -> a Session
// (one KV cache, one request at a time) -> per branch of a call, a constraint.
// Thread safety: a Model and a ToolSet are immutable and may be shared by sessions on several
// threads; a Session is one stream of requests and must be used by one thread at a time.
// Errors a caller can cause throw sw::Error; a model output that is not a valid call is not
// an exception but CallResult::error.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schemaweaver/tools.h"

namespace sw {

struct ModelParams {
  std::string path;          // GGUF file
  int context_size = 4096;   // tokens of KV cache per session
  int threads = 0;           // 0: all cores
  // How calls are written: "" the model's own chat template says (llama.cpp's analysis of it),
  // else one of this library's: "smollm2", "hermes", "hermes-list", "json".
  std::string call_format;
  std::string chat_template;  // a Jinja chat template's text that replaces the GGUF's ("" keeps it)
  bool vocab_only = false;   // load the tokenizer only (no weights; no Session possible)
  // How the weights are read (llama.cpp's loaders): mapped and read whole before the load
  // returns (mmap, the default), or copied into memory (false); repacked for the CPU's
  // kernels (faster passes, a slower load) or used as stored.
  bool mmap = true;
  bool repack = true;
  // A pipelined load: the model exists once its metadata is read, the weights follow in the
  // order the forward pass needs them, and a pass waits only for the weights it reaches.
  bool stream = false;
  // Where what this model's passes cost on this machine is kept between runs (the estimates
  // SchemaWeaver plans by; one small JSON file per model file, CPU and thread count). "" keeps
  // none: each process learns them anew from its first passes.
  std::string measurements_dir;
};

struct ModelInfo {
  std::string path;
  std::string description;     // llama.cpp's model description (architecture, size, type)
  std::string name;            // general.name from the GGUF metadata
  uint64_t weight_bytes = 0;   // bytes of all weight tensors
  uint64_t parameters = 0;
  int vocab_size = 0;
  int context_size = 0;
  int threads = 0;
  std::string call_format;
  // Why the model's own template did not give its call syntax and call_format is this
  // library's fallback ("" when it did, or when call_format was asked for by name).
  std::string call_format_fallback;
  std::string call_example;  // a call as the model writes it: a turn of one call to a tool "NAME"
  // The template's thinking block around a reasoning "REASONING" ("<think>\nREASONING\n</think>\n\n"),
  // which CallOptions::thinking_budget opens; "" if the template has none.
  std::string thinking_block;
  // The template opens that block whatever thinking is set to (MiniMax-M2): thinking off closes
  // it at once, empty (CallResult::thinking_text holds the close).
  bool thinking_always_open = false;
  std::string llama_version;   // llama.cpp version/commit this build is from
  std::string system_info;     // ggml's CPU feature summary
  double load_ms = 0;          // how long Model::load took
};

// This library's version and the llama.cpp build it was compiled against.
struct Version {
  std::string schemaweaver;  // "MAJOR.MINOR.PATCH"
  std::string llama_cpp;     // "llama.cpp@" and the build's commit or tag
};
Version version();

// The library prints nothing. What llama.cpp logs (a model's loading, its warnings and errors)
// goes to the callback set here, in pieces as llama.cpp writes them (a line may come in several);
// with none set (the default) it is dropped, and its errors are kept only for the message of the
// Error a failed load throws. Process-wide, as llama.cpp's log is: the library hands llama.cpp
// its log function once (here or at the first model load), so an app that also calls llama.cpp
// directly routes llama.cpp's messages through this callback. Thread-safe; the callback may be
// called from any thread that loads a model or decodes, one call at a time (it must not call
// set_log_callback). Empty: dropped again.
enum class LogLevel { Debug, Info, Warn, Error };
using LogCallback = std::function<void(LogLevel level, const std::string& text)>;
void set_log_callback(LogCallback callback);

class LoadedModel;

class Model {
 public:
  // Throws Error for a missing, unreadable, truncated or otherwise invalid model file.
  static std::shared_ptr<Model> load(const ModelParams& params);
  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  ModelInfo info() const;

 private:
  // The library's loaded model (llama.cpp's handles, the vocabulary, the call format) is the
  // only kind of Model there is; its parts are private to the library.
  friend class LoadedModel;
  Model() = default;
};

enum class DecodeMode {
  Free,          // no grammar: decode freely, then parse
  Constrained,   // every token checked against the grammar of the tools' calls
  JumpForward,   // constrained, and text the grammar forces is prefilled without decoding
  Speculative,   // constrained, and each pass also checks a draft looked up in the prompt
  SchemaWeaver,  // tool name, then the schema's skeleton in one pass, then all required
                 // argument values decoded in parallel branches, then optional arguments
};
std::string to_string(DecodeMode mode);
DecodeMode parse_decode_mode(const std::string& name);  // throws Error on an unknown name

struct Message {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  std::vector<ToolCall> tool_calls{};  // assistant: calls it made (written in the model's format)
  std::string tool_call_id{};          // tool: the call this is the result of
  // assistant: what it reasoned first (CallResult::reasoning), for a reasoning template to show
  // back where it does (Qwen3's shows the current turn's)
  std::string reasoning_content{};
};

// SchemaWeaver's design steps, each switchable (the ablation of the paper's Table 7).
struct WeaverOptions {
  bool parallel_values = true;  // false: the branches are decoded one after another
  bool padding = true;          // pad a pass to a larger token count when that is measured cheaper
  bool provisional = true;      // emit provisional calls for read-only tools
  // Each values pass also checks prompt-lookup drafts of how the values go on; the answer is
  // the same, the passes fewer when the drafts are taken.
  bool drafts = false;
  // From the second call of a turn on, the pass that writes a call back also carries a guess
  // of how the turn goes on: the call closed and the next one begun with the same tool. The
  // phases after it check the guess on the logits of that pass, as a draft, and skip the passes
  // of what they find right there; after a guess that was not taken the turn goes on without.
  bool whole_turn = false;
  // Lossless: every value the branches decoded is checked on the logits of the write-back pass
  // against the choice of the serial reference (jump-forward, the same grammar and key order);
  // from the first disagreement on, the reference writes the call, the branches' text its
  // draft. The calls are then the reference's. False: the branches' values stand as decoded.
  bool verify = true;
  // The write-back takes over the first branch's cells (its value was computed over the
  // conversation's context already). False: they are computed again in the write-back pass,
  // so that every cell of the call lies where a serial decoder puts it - the same logits bit
  // for bit on kernels that compute a token's row alike in passes of any shape (README, "Why
  // lossless modes differ"); it costs the first value's tokens in that pass. Off whenever tokens
  // are drawn (Sampling): each of the first value's tokens is then checked by a draw too.
  bool adopt_first = true;
  // Each call's values in branches only where that is predicted to cost less than decoding
  // them serially, from what passes cost on this machine now (the calls are the same either
  // way). False (switch "branches"): always in branches.
  bool plan_by_cost = true;
};

// How each token is chosen: greedily (temperature 0, the default: the answer is then the same
// every time), or drawn from the model's distribution over the tokens the constraint allows,
// shaped as a llama.cpp sampler chain of top_k, min_p, top_p (both on the distribution at
// temperature 1) and the temperature, in that order. Every mode draws from the same distribution: SchemaWeaver's
// branch values are drafts whose every token is checked by a draw on the logits of the write-back
// pass, and from the first draw that differs the serial decoder writes on from that draw; so a
// call is distributed as jump-forward's under the same sampling (its first value is then computed
// again in the write-back pass: WeaverOptions::adopt_first is off).
struct Sampling {
  float temperature = 0;
  int top_k = 40;        // the most likely allowed tokens kept (0: all)
  float top_p = 0.95f;   // the smallest set of them holding this much probability (1: all)
  float min_p = 0.05f;   // and of those, the ones at least this share of the best one's (0: all)
  std::optional<uint64_t> seed;  // the same seed, the same draws; none: a random one
};

// A call as soon as it can be executed (SchemaWeaver emits it before the turn is finished).
struct CallEvent {
  enum class Kind {
    Provisional,  // required arguments only, for a read-only tool; optional ones may follow
    Final,        // the call as it stands in the answer
  };
  Kind kind = Kind::Final;
  int index = 0;         // position of the call in the turn
  ToolCall call;
  double at_ms = 0;      // since the start of call generation
  // Final only: a provisional call with this index was emitted and differs from this one; its
  // result must be discarded. (If the provisional call equals the final one it stands.)
  bool replaces_provisional = false;

  Json to_json() const;  // {"kind", "index", "call", "at_ms", "replaces_provisional"}
};

// A call as its text is decided (CallOptions::on_call_delta): its first delta names its tool,
// the others carry pieces of its arguments that, joined, are dump_json of the final call's
// arguments - each piece told once the decided text fixes it.
struct CallDelta {
  int index = 0;          // position of the call in the turn, as CallEvent::index
  std::string name;       // the first delta's only
  std::string arguments;  // the piece added
};

// Whether the answer must be a call (OpenAI's tool_choice).
enum class ToolChoice {
  Required,  // a call, in the decoding mode
  Auto,      // the model's opening decides: a call if it begins one in any form models write
             // (the format's tag, a fenced block, bare JSON naming a tool, python-like
             // name( ...), which is then decoded as Required decodes it; else a reply in text
  None,      // a reply in text (the tools are still shown to the model)
};
// "required", "auto" or "none" (OpenAI's spelling); throws Error on another name.
ToolChoice parse_tool_choice(const std::string& name);

class ToolSet;

struct CallOptions {
  DecodeMode mode = DecodeMode::SchemaWeaver;
  int max_tokens = 256;  // tokens chosen by the model at most, after the prompt (and the thinking)
  // A reasoning template's thinking block (ModelInfo::thinking_block). 0: off, the template's
  // own "thinking off" (llama-server's enable_thinking false: Qwen3's empty block ends the
  // prompt; a template that opens the block anyway gets it closed at once). N > 0: the model reasons freely for up to N tokens, the block is closed as the
  // template writes it (the model's end marker, or forced at the budget), and the answer follows
  // in the mode, under tool_choice as without thinking (auto reads the opening after the block).
  // Throws Error if the template has no thinking block.
  int thinking_budget = 0;
  // Variables for the model's chat template besides its thinking switch (llama-server's
  // chat_template_kwargs), e.g. {"reasoning_effort": "low"} for gpt-oss. Throws Error for a model
  // without a Jinja template, and for "enable_thinking" (thinking_budget sets it).
  Json template_kwargs = Json::object();
  ToolChoice tool_choice = ToolChoice::Required;
  // Calls in the turn at most (OpenAI's parallel_tool_calls false is 1); 0: any number. The
  // grammar ends the turn after the last allowed call; free decoding reports an error instead.
  int max_calls = 0;
  // The turn's calls written as one JSON list inside the format's block (CallFormat::as_list),
  // not block by block: for a request that expects several calls. A small model that ends its
  // turn after the first of several blocks writes them all into a list; on a one-call request
  // the list invites calls nobody asked for (bench/results/2026-12-04-peers). Not in free mode.
  bool calls_as_list = false;
  // A tool chosen beforehand (a tool selector): the calls use this tool and its name is not
  // decoded. "" lets the model choose. Throws Error if no tool has this name.
  std::string tool;
  // SchemaWeaver only: the argument set is known, so these arguments all get parallel branches
  // and no optional argument is decided afterwards (the paper's upper bound). Empty: unknown.
  std::vector<std::string> given_arguments;
  WeaverOptions weaver;
  // Speculative only: drafts come from this smaller model with the same vocabulary instead of
  // prompt lookup. Throws Error if its vocabulary differs.
  std::shared_ptr<const Model> draft_model;
  std::function<void(const CallEvent&)> on_call;  // called as calls become executable
  // A reply in text (ToolChoice None, or Auto's choice of text): its text as it is decided, in
  // pieces of whole UTF-8 characters (what a cut-off answer ends with excepted) that joined are
  // CallResult::text. Under Auto the first piece comes once the opening is known to be text;
  // with stop strings, the bytes that may begin one wait until they do not. An answer in a
  // schema (compile_schema) is told so too: its JSON text, as its values are decided (in
  // SchemaWeaver, as they are verified).
  std::function<void(const std::string& piece)> on_text;
  // Called once the thinking block is closed, with what the model reasoned (CallResult::reasoning).
  std::function<void(const std::string& reasoning)> on_reasoning;
  // Polled before every forward pass; returning true stops the call with Cancelled (a client
  // that went away, a deadline).
  std::function<bool()> cancelled;
  Sampling sampling;  // greedy by default
  // A reply in text ends before the first of these it writes (OpenAI's stop; the text returned
  // and told to on_text stops there). Never inside a call. Throws Error for an empty one.
  std::vector<std::string> stop;
  // Each call as it is decided (CallDelta): token by token in the serial modes, in SchemaWeaver
  // as its arguments are verified (a repaired value then token by token). A call's final event
  // may come before its last delta: SchemaWeaver knows a verified call before the reference has
  // written its last token. Not in free mode (whose calls stand only once the whole answer
  // parsed) nor for formats whose arguments are not one JSON object (tagged, keywords): their
  // calls come whole, by on_call.
  std::function<void(const CallDelta&)> on_call_delta;
  // A reply in text's tokens with their log probabilities and this many of the most likely
  // tokens at each (0 to 20; CallResult::logprobs); -1: none. A reply's tokens are all the
  // model's choices; a call's are not asked for (its forced text has no choice to weigh).
  int logprobs = -1;
  // Under tool_choice auto, where the model does not call: its answer is one object of this
  // schema (a set compile_schema made for the same model) instead of text - OpenAI's
  // response_format beside tools. The opening is read as under auto (the prompt shows the
  // tools); a reply's beginning is thrown away and the object decoded from the prompt in the
  // mode, told to on_text (CallResult::schema_answer). null: a reply is text. Throws Error under
  // another tool_choice, without tools, in free mode and with logprobs.
  std::shared_ptr<const ToolSet> answer_schema;
  // Under tool_choice auto: where every call of the answer repeats one the conversation already
  // made and got a result for (the same tool, the same arguments; CallStats::repeated_calls), the
  // answer is a reply in text instead, decoded again from the prompt with its beginning kept
  // from every form that opens a call (CallResult::answered_instead_of_repeating). Off by
  // default: the model's choice stands and is only counted. With it on, the calls are told to
  // on_call and on_call_delta once they are known to stand (after the answer, not as decided).
  bool answer_instead_of_repeating = false;
};

// Applies a mode as the CLI's --mode and the server's x_decoding_mode spell it,
// "mode[/switch...]": the decoding mode, then switches that set `options` - auto (tool_choice
// auto, any mode), list (calls_as_list, any mode but free) and, for schemaweaver, no-parallel, no-padding, no-provisional, drafts,
// whole-turn, unverified, no-adopt and branches (WeaverOptions). Switches named in `own` are the caller's: they are
// returned in order, for it to apply. Throws Error on an unknown mode or switch.
std::vector<std::string> apply_mode(const std::string& text, CallOptions& options,
                                    const std::vector<std::string>& own = {});

// A call stopped because CallOptions::cancelled said so.
class Cancelled : public Error {
 public:
  using Error::Error;
};

// A token the model chose: where its text starts in CallResult::text, and by how much its logit
// led the best other token the constraint allowed there (infinity: no other token was allowed).
// A small margin is a near-tie, which other kernels (another CPU, another pass shape) may break
// the other way; decisions with a wide margin come out the same on every machine.
struct Decision {
  size_t offset = 0;
  float margin = 0;
};

// Time and passes of one phase of a call (SchemaWeaver: name, skeleton, values, write-back,
// optional; serial modes: decode).
struct PhaseStats {
  std::string name;
  int passes = 0;
  int tokens = 0;
  double ms = 0;
};

// What one call cost. A pass is one llama_decode; prefill passes carry the prompt (or a
// forced run of text), decode passes carry one sampled token each.
// SchemaWeaver's check of its parallel values against the serial reference (WeaverOptions::verify).
struct VerificationStats {
  int checked_tokens = 0;    // value choices checked on the logits of the write-back pass
  int repaired_calls = 0;    // calls whose values the reference chose differently
  int discarded_tokens = 0;  // value tokens from the first disagreement on, decided again serially
  int unverified_calls = 0;  // calls written back without the logits to check them (none expected)
};

// How SchemaWeaver decoded a call's values, and the predicted time of each way.
struct PlanStats {
  std::string tool;
  bool branches = true;    // false: serially, as jump-forward writes them
  double branches_ms = 0;  // predicted from the pass costs (both 0: none known yet, or not
  double serial_ms = 0;    // planned by cost; the branches then)
};

struct CallStats {
  int prompt_tokens = 0;
  int prompt_reused_tokens = 0;  // of which came from the KV cache of the previous call
  int prompt_restored_tokens = 0;   // of the reused, read from the prompt cache on disk
  int prompt_cache_stored_tokens = 0;  // of the prompt, saved to the prompt cache (a new tool set)
  int prompt_passes = 0;
  double prompt_ms = 0;       // prompt prefill (of the tokens not reused)
  int call_passes = 0;        // passes during call generation
  int call_prefill_passes = 0;  // of which carried forced text (jump-forward)
  int call_tokens = 0;        // tokens those passes carried
  int sampled_tokens = 0;     // tokens chosen by the model
  double call_ms = 0;         // from the end of prompt prefill to the end of the answer
  // From the end of prompt prefill until every call of the turn could be executed (its
  // object closed, or its provisional call emitted and kept): the tool-call latency.
  double executable_ms = 0;
  double constraint_ms = 0;   // of call_ms, spent checking tokens against the grammar
  // Spent compiling the tool set: all of it for a call given plain ToolSpecs, else the pieces a
  // compiled set did not hold yet (a value's grammar after a text it had not met).
  double compile_ms = 0;
  long peak_rss_kb = 0;       // VmHWM of the process after the call
  int constraint_steps = 0;   // token choices checked against a constraint
  int draft_tokens = 0;       // speculative: draft tokens checked
  int accepted_draft_tokens = 0;  // of which the model chose (each saved a pass)
  VerificationStats verification;
  std::vector<PhaseStats> phases;
  std::vector<PlanStats> plans;   // SchemaWeaver: per call of the turn with arguments
  // The answer's passes (after the prompt's) by the tokens each carried, the rows of logits
  // they kept beyond one each (branches, drafts, a write-back's checks), and their time: what
  // bench/replay.py prices with another machine's pass costs.
  std::map<int, int> passes_by_tokens;
  int extra_kept_rows = 0;
  double pass_ms = 0;
  std::vector<CallEvent> events;  // the calls as they became executable
  // Calls of the answer that repeat one the conversation already made and got a result for (the
  // same tool, the same arguments): a small model that calls again what it was answered.
  int repeated_calls = 0;
  // Every token the model chose, in the order of the text. Under ToolChoice::Auto, the choice
  // between a call and a reply in text is the first, at offset 0, with the smallest margin of
  // the tokens that decided it.
  std::vector<Decision> decisions;

  // The figures above (and the closest decision's margin) as JSON, as the CLI prints them.
  Json to_json() const;
};

// A token the model chose and how likely it was: its log probability under the model's
// distribution at that place (all tokens, at temperature 1, before any constraint or sampling
// setting), and the most likely tokens there (CallOptions::logprobs of them).
struct TokenLogprob {
  std::string token;  // its bytes (a piece of a character where a token splits one)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // most likely first
};

struct CallResult {
  std::vector<ToolCall> calls;  // the calls parsed from the text (empty if none could be)
  std::string text;             // the generated text (after the thinking block, if any)
  std::string thinking_text;    // CallOptions::thinking_budget: the block as written, markers included
  std::string reasoning;        // of which what the model reasoned (llama.cpp's reasoning_content)
  std::string error;  // why the text is not a valid call ("" if it is): not parsable, or a
                      // parsed call that does not fit the tools' schemas
  bool text_reply = false;             // the model replied in text (ToolChoice Auto or None)
  // The answer is one object of a response schema (a compile_schema set's, or
  // CallOptions::answer_schema's where the model did not call): `text` is its JSON, `calls` one
  // call of the schema's name whose arguments are the object.
  bool schema_answer = false;
  // The answer was cut off at max_tokens. An answer in a schema is then closed by the fewest
  // bytes its grammar allows (its strings, arrays and objects ended, each missing required value
  // its shortest: "", 0, [], the shortest enum member), so that it stays one valid object (in
  // SchemaWeaver's parallel branches each value so). A call is never closed: a cut value is not
  // to be executed.
  bool stopped_at_max_tokens = false;
  // The model's calls all repeated answered ones and CallOptions::answer_instead_of_repeating
  // made the answer a reply in text (CallStats::repeated_calls says how many it wrote).
  bool answered_instead_of_repeating = false;
  // A reply in text's tokens, each with its log probability (CallOptions::logprobs >= 0).
  std::vector<TokenLogprob> logprobs;
  CallStats stats;

  // The result as JSON, as the CLI's --json and the C API give it: calls, text, error,
  // text_reply, schema_answer, stopped_at_max_tokens, thinking_text, reasoning, decisions ([offset, margin]),
  // stats, events, and logprobs where asked for.
  Json to_json() const;
};

// The prompt a call with `options` (its tool choice, its thinking) sends to the model: the
// conversation with the tools, rendered by the model's chat template. Throws Error on an unknown
// role or template.
std::string render_prompt(const Model& model, const std::vector<Message>& messages,
                          const std::vector<ToolSpec>& tools, const CallOptions& options = {});

// A tool set compiled for a model: the tools, and the grammars, skeletons and token sequences
// that calls with them need. The pieces that depend on how a call goes (the text before a
// value) are compiled where a call first needs them and kept, under a lock; so a ToolSet is
// immutable in what it answers and may be shared by sessions on several threads. A call with a
// compiled set decodes exactly what a call with plain ToolSpecs decodes, without compiling.
class CompiledToolSet;

class ToolSet {
 public:
  virtual ~ToolSet() = default;
  ToolSet(const ToolSet&) = delete;
  ToolSet& operator=(const ToolSet&) = delete;
  const std::vector<ToolSpec>& tools() const { return tools_; }
  // The tools' canonical JSON (ToolSpec::to_openai with read_only): equal for equal tool lists.
  const std::string& key() const { return key_; }
  double compile_ms() const { return compile_ms_; }  // how long compile_tools took

 private:
  friend class CompiledToolSet;  // the library's only kind of ToolSet
  // `key_prefix` tells sets of the same tools apart that answer otherwise (a schema's answers).
  ToolSet(std::vector<ToolSpec> tools, const std::string& key_prefix);
  std::vector<ToolSpec> tools_;
  std::string key_;
  double compile_ms_ = 0;
};

// Compiles `tools` (as parse_tools returns them; may be empty, for calls that may reply in text)
// for `model`, in the call format the model was loaded with (ModelParams::call_format); a model
// loaded with vocab_only will do. Throws Error if two tools have the same name.
std::shared_ptr<const ToolSet> compile_tools(std::shared_ptr<const Model> model, std::vector<ToolSpec> tools);

// Compiles a response schema (parse_response_schema) for answers that are one JSON object of it
// (OpenAI's structured outputs): Session::call with this set answers with the object, in every
// mode but free, its properties decoded as a call's arguments are (SchemaWeaver: in parallel
// branches, written back and verified). CallResult::text is the object's JSON text and
// CallResult::calls one call of the schema's name whose arguments are the object. The prompt
// shows no tools (the messages ask for the answer); tool_choice must be required (the default).
// Its key differs from every tool set's.
std::shared_ptr<const ToolSet> compile_schema(std::shared_ptr<const Model> model, ToolSpec answer);

// Compiled tool sets by their key (ToolSet::key), the least recently used dropped beyond `capacity`: what a server keeps, since its clients send
// the same tools with every request. Thread-safe.
struct ToolSetCacheState;

class ToolSetCache {
 public:
  explicit ToolSetCache(std::shared_ptr<const Model> model, size_t capacity = 32);
  ~ToolSetCache();
  // The compiled set of `tools`, compiled now if the cache does not hold it.
  std::shared_ptr<const ToolSet> get(const std::vector<ToolSpec>& tools);
  // The same for a response schema's answers (compile_schema).
  std::shared_ptr<const ToolSet> get_schema(const ToolSpec& answer);
  struct Counts {
    long hits = 0, misses = 0;
    size_t size = 0;
  };
  Counts counts() const;

 private:
  std::shared_ptr<const ToolSet> get(const std::string& key, const std::function<std::shared_ptr<const ToolSet>()>& compile);
  std::unique_ptr<ToolSetCacheState> state_;
};

class SessionState;

class Session {
 public:
  explicit Session(std::shared_ptr<const Model> model);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Renders the prompt with the model's chat template and the tools, then generates.
  // Throws Error on bad input (no tools, prompt longer than the context), Cancelled when
  // options.cancelled asks to stop. Free decoding without tools is a plain reply.
  CallResult call(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools,
                  const CallOptions& options);
  // The same with a compiled tool set (compile_tools, ToolSetCache): what the set holds is not
  // compiled again (CallStats::compile_ms: the pieces it had not met yet).
  // Throws Error if the set was compiled for another model.
  CallResult call(const std::vector<Message>& messages, const ToolSet& tools, const CallOptions& options);
  // Checks everything call() would reject before generating (tools, options, the prompt's
  // length) and returns the prompt's token count. Throws Error.
  int check(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools,
            const CallOptions& options) const;
  int check(const std::vector<Message>& messages, const ToolSet& tools, const CallOptions& options) const;

  // The pass-cost curve (ms of a pass carrying 1, 2, ... tokens and keeping the logits of one)
  // and what each further kept row of logits adds, that plans, padding and drafts are sized by,
  // instead of what the session learns from its own passes (the default: every pass is a
  // measurement, the estimates follow what passes cost now and are kept between runs): a curve
  // measured elsewhere (measure_pass_costs), or a fixed one that makes the pass shapes the same
  // on every machine. Throws Error if the curve is empty or holds a time that is not positive,
  // or the row's cost is negative.
  void use_pass_costs(std::vector<double> ms, double ms_per_kept_row = 0);

  // A prompt state saved to a file: the keys and values of the last call's prompt, tagged with
  // the model file that computed them. A process that starts later with the same model and a
  // prompt that begins the same (the system prompt and the tools) restores it and computes only
  // the rest. save_prompt_state writes the file whole or not at all; throws Error before any
  // call or when the file cannot be written.
  void save_prompt_state(const std::string& path);
  // Replaces what the session's cache holds; returns the tokens restored: 0 if there is no such
  // file, or it was computed by another model file or for another cache layout (the next call
  // then computes its whole prompt). Throws Error if the file is not a prompt state.
  int restore_prompt_state(const std::string& path);

  // Tool-set prefixes kept on disk, in `dir` (created if needed), at most max_bytes in all, the
  // least recently used removed first. A call whose prompt's beginning (the system message that
  // lists the tools) is not in the session's KV cache reads it from there if an earlier call of
  // any process with the same model file and llama.cpp build saved it, and else saves it once
  // computed. Files are named by a hash and hold their tokens, so a stale one is never used.
  // Throws Error if the folder cannot be made.
  void use_prompt_cache(const std::string& dir, uint64_t max_bytes);

 private:
  std::unique_ptr<SessionState> state_;  // the KV cache and what it holds, private to the library
};

}  // namespace sw
