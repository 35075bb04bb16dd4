// Compiled against llama.cpp's chat headers (and their nlohmann::json) only; see llama_chat.h.
#include "engine/chat/llama_chat.h"

#include <mutex>
#include <stdexcept>

#include "chat.h"
#include "llama.h"
#include "log.h"

namespace sw::llama_chat {

struct Templates::Handle {
  common_chat_templates_ptr templates;
};

namespace {

// llama-server's default: a reasoning block is read into reasoning_content, not the content.
constexpr common_reasoning_format kReasoning = COMMON_REASONING_FORMAT_DEEPSEEK;

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
}

Templates::~Templates() = default;

Rendered Templates::render(const Request& request) const {
  common_chat_templates_inputs inputs;
  for (const Message& m : request.messages) inputs.messages.push_back(to_common(m));
  for (const Tool& t : request.tools) inputs.tools.push_back({t.name, t.description, t.parameters});
  inputs.tool_choice = common_chat_tool_choice_parse_oaicompat(request.tool_choice);
  inputs.parallel_tool_calls = request.parallel_tool_calls;
  inputs.enable_thinking = request.enable_thinking;
  inputs.reasoning_format = kReasoning;
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
  params.reasoning_format = kReasoning;
  if (!rendered.parser.empty()) params.parser.load(rendered.parser);
  common_chat_msg msg = common_chat_parse(output, false, params);
  Message out{msg.role, msg.content, msg.reasoning_content, {}, msg.tool_call_id};
  for (const common_chat_tool_call& c : msg.tool_calls) out.calls.push_back({c.name, c.arguments, c.id});
  return out;
}

std::string Templates::source() const { return common_chat_templates_source(handle_->templates.get()); }

}  // namespace sw::llama_chat
