#include "schemaweaver/chat_template.h"

#include <exception>

#include "engine/chat/llama_chat.h"
#include "engine/model/model.h"
#include "engine/session/chat_template.h"

namespace sw {

struct ChatTemplate::Impl {
  std::shared_ptr<const llama_chat::Templates> templates;
  std::string source;
};

namespace {

llama_chat::Message to_chat(const Message& m) {
  llama_chat::Message out{m.role, m.content, m.reasoning_content, {}, m.tool_call_id};
  for (const ToolCall& c : m.tool_calls) out.calls.push_back({c.name, dump_json(c.arguments), c.id});
  return out;
}

ToolCall to_call(const llama_chat::Call& c) {
  Json arguments = Json::parse(c.arguments.empty() ? "{}" : c.arguments, nullptr, false);
  if (arguments.is_discarded())
    throw Error("llama.cpp's parser gave '" + c.name + "' arguments that are not JSON: " + c.arguments);
  return {c.name, std::move(arguments), c.id};
}

}  // namespace

ChatTemplate::ChatTemplate(const Model& model, const std::string& source) : impl_(std::make_unique<Impl>()) {
  const LoadedModel& m = loaded(model);
  try {
    impl_->templates = source.empty() && m.templates ? m.templates
                                                     : std::make_shared<const llama_chat::Templates>(m.model, source);
    impl_->source = impl_->templates->source();
  } catch (const std::exception& e) {
    throw Error(std::string("the chat template cannot be read: ") + e.what());
  }
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

namespace {

// `request`, its messages given, with the tools and options; rendered.
ChatTemplate::Rendered render_request(const llama_chat::Templates& templates, llama_chat::Request request,
                                      const std::vector<ToolSpec>& tools, const TemplateOptions& options) {
  for (const ToolSpec& t : tools)
    request.tools.push_back({t.name, t.description, dump_json(t.to_openai().at("function").at("parameters"))});
  if (options.tool_choice != "auto" && options.tool_choice != "required" && options.tool_choice != "none")
    throw Error("tool_choice is auto, required or none, not '" + options.tool_choice + "'");
  request.tool_choice = options.tool_choice;
  request.parallel_tool_calls = options.parallel_tool_calls;
  request.enable_thinking = options.enable_thinking;
  request.template_kwargs = options.template_kwargs;
  try {
    llama_chat::Rendered r = templates.render(request);
    return {r.prompt, r.syntax, r.generation_prompt, r.supports_thinking, r.parser};
  } catch (const std::exception& e) {
    throw Error(std::string("the chat template failed: ") + e.what());
  }
}

}  // namespace

ChatTemplate::Rendered render_chat(const llama_chat::Templates& templates, const std::vector<Message>& messages,
                                   const std::vector<ToolSpec>& tools, const TemplateOptions& options) {
  llama_chat::Request request;
  for (const Message& m : messages) request.messages.push_back(to_chat(m));
  return render_request(templates, std::move(request), tools, options);
}

ChatTemplate::Rendered ChatTemplate::render(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools,
                                            const TemplateOptions& options) const {
  return render_chat(*impl_->templates, messages, tools, options);
}

ChatTemplate::Rendered ChatTemplate::render_openai(const Json& openai_messages, const std::vector<ToolSpec>& tools,
                                            const TemplateOptions& options) const {
  llama_chat::Request request;
  request.openai_messages = dump_json(openai_messages);
  return render_request(*impl_->templates, std::move(request), tools, options);
}

ParsedOutput ChatTemplate::parse(const std::string& output, const Rendered& rendered) const {
  llama_chat::Message message;
  try {
    message = impl_->templates->parse(output, {rendered.prompt, rendered.syntax, rendered.generation_prompt,
                                                rendered.supports_thinking, rendered.parser});
  } catch (const std::exception& e) {
    throw Error(std::string("llama.cpp's parser refuses the output: ") + e.what());
  }
  ParsedOutput parsed{message.content, message.reasoning_content, {}};
  for (const llama_chat::Call& c : message.calls) parsed.calls.push_back(to_call(c));
  return parsed;
}

const std::string& ChatTemplate::source() const { return impl_->source; }

}  // namespace sw
