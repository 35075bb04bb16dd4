// Compiled against llama.cpp's chat headers (and their nlohmann::json) only; see llama_chat.h.
#include "engine/chat/llama_chat.h"

#include <mutex>
#include <stdexcept>

#include <sstream>

#include "chat-auto-parser-helpers.h"
#include "chat-auto-parser.h"
#include "chat.h"
#include "llama.h"
#include "log.h"

// llama.cpp's choice of the templates it reads with a handler of its own (common/chat.cpp,
// outside its header): asked here so that a template goes where llama-server sends it.
std::optional<common_chat_params> common_chat_try_specialized_template(const common_chat_template& tmpl,
                                                                       const std::string& src,
                                                                       autoparser::generation_params& params);

namespace sw::llama_chat {

struct Templates::Handle {
  common_chat_templates_ptr templates;
  std::string bos, eos;  // the vocabulary's texts of its start and end tokens, as the template sees them
};

namespace {

// llama-server's default: a reasoning block is read into reasoning_content, not the content.
constexpr common_reasoning_format kReasoningFormat = COMMON_REASONING_FORMAT_DEEPSEEK;

common_chat_msg to_common(const Message& m) {
  common_chat_msg out;
  out.role = m.role;
  out.content = m.content;
  out.reasoning_content = m.reasoning_content;
  out.tool_call_id = m.tool_call_id;
  for (const Call& c : m.calls) out.tool_calls.push_back({c.name, c.arguments, c.id});
  return out;
}

common_chat_format format_named(const std::string& name) {
  for (int f = 0; f < COMMON_CHAT_FORMAT_COUNT; ++f)
    if (name == common_chat_format_name(common_chat_format(f))) return common_chat_format(f);
  throw std::invalid_argument("llama.cpp has no chat format named '" + name + "'");
}

template <class T>
std::string text_of(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// The sample tools and the turn that calls them (CallAnalysis::sample).
std::vector<common_chat_tool> sample_tools() {
  return {{CallAnalysis::kSampleNames[0], "", R"({"type": "object", "properties": {"alpha": {"type": "string"}}})"},
          {CallAnalysis::kSampleNames[1], "", R"({"type": "object", "properties": {"beta": {"type": "integer"}}})"}};
}

// A user turn rendered with the generation prompt (`before`), and followed by an assistant
// `turn` instead (`after`), with `inputs`' tools and switches: what the template adds for an
// answer is where the two part.
struct TurnRendering {
  common_chat_params before;
  std::string after;
};

TurnRendering render_turn(const common_chat_templates* templates, common_chat_templates_inputs inputs,
                          const std::string& user_text, const common_chat_msg& turn) {
  common_chat_msg user;
  user.role = "user";
  user.content = user_text;
  inputs.messages = {user};
  inputs.add_generation_prompt = true;
  TurnRendering r{common_chat_templates_apply(templates, inputs), ""};
  inputs.messages.push_back(turn);
  inputs.add_generation_prompt = false;
  r.after = common_chat_templates_apply(templates, inputs).prompt;
  return r;
}

// Where an assistant turn's own text begins in `after`, the prompt that was `before` followed by
// the turn: after the generation prompt where the turn repeats it, else where the two part -
// moved back to the start of a marker the two share only the beginning of (a generation prompt
// "<think>..." and a turn "<function ...", both opening with "<").
size_t answer_begin(const std::string& before, const std::string& after) {
  size_t shared = 0;
  while (shared < before.size() && shared < after.size() && before[shared] == after[shared]) ++shared;
  if (shared == before.size()) return shared;
  const size_t open = after.find_last_of("<[", shared == 0 ? 0 : shared - 1);
  if (open != std::string::npos && after.find_first_of(">]", open) >= shared) return open;
  return shared;
}

std::string render_sample_turn(const common_chat_templates* templates, int calls) {
  common_chat_templates_inputs inputs;
  inputs.tools = sample_tools();
  inputs.enable_thinking = false;
  inputs.chat_template_kwargs["enable_thinking"] = "false";
  common_chat_msg turn;
  turn.role = "assistant";
  for (int i = 0; i < calls; ++i)
    turn.tool_calls.push_back({CallAnalysis::kSampleNames[i], CallAnalysis::kSampleArguments[i], CallAnalysis::kSampleIds[i]});
  const TurnRendering r = render_turn(templates, inputs, "Call the tools.", turn);
  return r.after.substr(answer_begin(r.before.prompt, r.after));
}

// How much of `close` (what the template writes after a turn's reasoning and before its text)
// it also writes after the reasoning of a turn that calls a tool: the block's own close. gpt-oss
// ends its reasoning with "<|end|><|start|>assistant", then opens "<|channel|>final<|message|>"
// for text but " to=functions.NAME" for a call.
size_t shared_with_call_turn(const common_chat_templates* templates, const std::string& close,
                             common_chat_templates_inputs inputs, common_chat_msg turn) {
  inputs.tools = sample_tools();
  turn.content.clear();
  turn.tool_calls = {{CallAnalysis::kSampleNames[0], CallAnalysis::kSampleArguments[0], CallAnalysis::kSampleIds[0]}};
  try {
    const std::string after = render_turn(templates, inputs, "Think first.", turn).after;
    const size_t reasoning = after.find(turn.reasoning_content);
    if (reasoning == std::string::npos) return close.size();  // the template drops the reasoning of a call turn
    const std::string call_close = after.substr(reasoning + turn.reasoning_content.size());
    return answer_begin(close, call_close);
  } catch (const std::exception&) {
    return close.size();
  }
}

}  // namespace

Templates::Templates(const llama_model* model, const std::string& source_override)
    : handle_(std::make_unique<Handle>()) {
  // The library reports errors as exceptions; the chat library's own log lines (to stderr) are
  // silenced, once, as llama.cpp's are (model.cpp).
  static std::once_flag quiet;
  std::call_once(quiet, [] { common_log_set_verbosity_thold(-1); });
  // common_chat_templates_init rethrows a template's syntax error as a bare std::exception:
  // reading the template once here first keeps the message, with the place it points at.
  const char* own = llama_model_chat_template(model, nullptr);
  const std::string source = !source_override.empty() ? source_override : own ? own : "";
  if (!source.empty()) common_chat_template(source, "", "");
  handle_->templates = common_chat_templates_init(model, source_override);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const auto token_text = [vocab](llama_token t) { return t == LLAMA_TOKEN_NULL ? "" : llama_vocab_get_text(vocab, t); };
  handle_->bos = token_text(llama_vocab_bos(vocab));
  handle_->eos = token_text(llama_vocab_eos(vocab));
}

Templates::~Templates() = default;

Rendered Templates::render(const Request& request) const {
  common_chat_templates_inputs inputs;
  if (!request.openai_messages.empty())
    inputs.messages = common_chat_msgs_parse_oaicompat(nlohmann::ordered_json::parse(request.openai_messages));
  for (const Message& m : request.messages) inputs.messages.push_back(to_common(m));
  for (const Tool& t : request.tools) inputs.tools.push_back({t.name, t.description, t.parameters});
  inputs.tool_choice = common_chat_tool_choice_parse_oaicompat(request.tool_choice);
  inputs.parallel_tool_calls = request.parallel_tool_calls;
  inputs.enable_thinking = request.enable_thinking;
  inputs.reasoning_format = kReasoningFormat;
  inputs.chat_template_kwargs = request.template_kwargs;
  inputs.chat_template_kwargs["enable_thinking"] = request.enable_thinking ? "true" : "false";
  common_chat_params params = common_chat_templates_apply(handle_->templates.get(), inputs);
  return {params.prompt, common_chat_format_name(params.format), params.generation_prompt, params.supports_thinking,
          params.parser};
}

Message Templates::parse(const std::string& output, const Rendered& rendered) const {
  common_chat_parser_params params;
  params.format = format_named(rendered.syntax);
  params.generation_prompt = rendered.generation_prompt;
  params.reasoning_format = kReasoningFormat;
  if (!rendered.parser.empty()) params.parser.load(rendered.parser);
  common_chat_msg msg = common_chat_parse(output, false, params);
  Message out{msg.role, msg.content, msg.reasoning_content, {}, msg.tool_call_id};
  for (const common_chat_tool_call& c : msg.tool_calls) out.calls.push_back({c.name, c.arguments, c.id});
  return out;
}

CallAnalysis Templates::analyze() const {
  const std::string tool_use = common_chat_templates_source(handle_->templates.get(), "tool_use");
  const common_chat_template tmpl(tool_use.empty() ? source() : tool_use, handle_->bos, handle_->eos);
  CallAnalysis a;
  a.supports_tools = tmpl.original_caps().supports_tools;
  a.parallel = tmpl.original_caps().supports_parallel_tool_calls;
  autoparser::generation_params params;
  params.tools = common_chat_tools_to_json_oaicompat(sample_tools());
  params.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "Call the tools."}}});
  params.add_generation_prompt = true;
  a.specialized = common_chat_try_specialized_template(tmpl, tmpl.source(), params).has_value();
  autoparser::autoparser analysis;
  analysis.analyze_template(tmpl);
  const autoparser::analyze_tools& tools = analysis.tools;
  a.mode = text_of(tools.format.mode);
  a.section_start = trim_whitespace(tools.format.section_start);
  a.section_end = trim_whitespace(tools.format.section_end);
  a.call_start = trim_whitespace(tools.format.per_call_start);
  a.call_end = trim_whitespace(tools.format.per_call_end);
  a.list = tools.format.tools_array_wrapped;
  a.name_is_key = tools.format.fun_name_is_key;
  a.id_in_markers = tools.call_id.pos != autoparser::call_id_position::NONE;
  a.name_field = tools.format.name_field;
  a.args_field = tools.format.args_field;
  a.name_prefix = tools.function.name_prefix;
  a.name_suffix = tools.function.name_suffix;
  a.args_separator = tools.function.args_separator;
  a.close = trim_whitespace(tools.function.close);
  a.args_start = tools.arguments.start;
  a.args_end = tools.arguments.end;
  a.arg_name_prefix = tools.arguments.name_prefix;
  a.arg_name_suffix = tools.arguments.name_suffix;
  a.arg_value_prefix = tools.arguments.value_prefix;
  a.arg_value_suffix = tools.arguments.value_suffix;
  a.arg_separator = tools.arguments.separator;
  if (a.supports_tools && a.mode != "NONE") a.sample = render_sample_turn(handle_->templates.get(), a.parallel ? 2 : 1);
  return a;
}

bool Templates::reads_as_sample(const std::string& turn, int calls) const {
  Request request;
  request.messages = {{"user", "Call the tools.", "", {}, ""}};
  for (const common_chat_tool& t : sample_tools()) request.tools.push_back({t.name, t.description, t.parameters});
  request.parallel_tool_calls = calls > 1;
  try {
    const Message read = parse(turn, render(request));
    if (int(read.calls.size()) != calls) return false;
    for (int i = 0; i < calls; ++i) {
      if (read.calls[size_t(i)].name != CallAnalysis::kSampleNames[i] ||
          nlohmann::ordered_json::parse(read.calls[size_t(i)].arguments) !=
              nlohmann::ordered_json::parse(CallAnalysis::kSampleArguments[i]))
        return false;
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string Templates::reads_reasoning(const std::string& turn) const {
  Request request;
  request.messages = {{"user", "Think first.", "", {}, ""}};
  request.enable_thinking = true;
  try {
    return parse(turn, render(request)).reasoning_content;
  } catch (const std::exception&) {
    return "";
  }
}

ReasoningBlock Templates::reasoning_block() const {
  static const std::string kReasoning = "SWREASONING", kContent = "SWCONTENT";
  common_chat_templates_inputs inputs;
  inputs.enable_thinking = true;
  inputs.chat_template_kwargs["enable_thinking"] = "true";
  inputs.reasoning_format = kReasoningFormat;
  common_chat_msg turn;
  turn.role = "assistant";
  turn.reasoning_content = kReasoning;
  turn.content = kContent;
  try {
    const TurnRendering r = render_turn(handle_->templates.get(), inputs, "Think first.", turn);
    if (!r.before.supports_thinking) return {};
    const std::string& before = r.before.prompt;
    const std::string& after = r.after;
    const size_t reasoning = after.find(kReasoning), content = after.find(kContent);
    if (after.compare(0, before.size(), before) != 0 || reasoning == std::string::npos || content == std::string::npos ||
        content < reasoning || reasoning < before.size())
      return {};
    ReasoningBlock block;
    block.opener = after.substr(before.size(), reasoning - before.size());
    block.close = after.substr(reasoning + kReasoning.size(), content - reasoning - kReasoning.size());
    const std::string close_before_text = block.close;
    block.close.resize(shared_with_call_turn(handle_->templates.get(), block.close, inputs, turn));
    block.end = trim_whitespace(block.close);
    if (block.end.empty()) return {};
    block.keeps_leading_space = reads_reasoning(block.opener + " " + kReasoning + close_before_text + kContent) == " " + kReasoning;
    // Thinking off, the same generation prompt: the block is open either way.
    inputs.enable_thinking = false;
    inputs.chat_template_kwargs["enable_thinking"] = "false";
    block.always_open = block.opener.empty() && render_turn(handle_->templates.get(), inputs, "Think first.", turn).before.prompt == before;
    return block;
  } catch (const std::exception&) {
    return {};  // a template that fails on a turn with reasoning has no block to think in
  }
}

std::string Templates::source() const { return common_chat_templates_source(handle_->templates.get()); }

}  // namespace sw::llama_chat
