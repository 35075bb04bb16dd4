// The prompt of a call (prompt.h): the model's template or the library's instruction, and the
// prompt cache's prefix.
#include "engine/session/prompt.h"

#include "engine/session/chat_template.h"

namespace sw {
namespace {

// The tool choice as OpenAI's requests (and chat templates) name it.
const char* openai_name(ToolChoice choice) {
  switch (choice) {
    case ToolChoice::Auto: return "auto";
    case ToolChoice::None: return "none";
    case ToolChoice::Required: break;
  }
  return "required";
}

// The caller's template variables as llama.cpp's chat library takes them (JSON texts).
std::map<std::string, std::string> template_variables(const LoadedModel& model, const Json& kwargs) {
  std::map<std::string, std::string> variables;
  if (kwargs.is_null() || kwargs.empty()) return variables;
  if (!kwargs.is_object()) throw Error("template_kwargs must be a JSON object");
  if (!model.templates) throw Error("the model has no Jinja chat template to pass template variables to");
  for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
    if (it.key() == "enable_thinking") throw Error("enable_thinking is set by the thinking budget, not as a template variable");
    variables[it.key()] = dump_json(it.value());
  }
  return variables;
}

// The conversation with this library's instruction as its first system message, tool results
// and earlier calls in the format's words (for a format of the library's).
std::vector<Message> with_instruction(const CallFormat& format, const std::vector<Message>& messages,
                                      const ShownTools& shown) {
  std::string user_system;
  std::vector<Message> chat;
  bool after_tool_result = false;  // the last message of `chat` holds tool results
  for (const Message& m : messages) {
    if (m.role == "system" && chat.empty() && user_system.empty()) {
      user_system = m.content;
      continue;
    }
    if (m.role == "tool") {
      auto [role, text] = format.tool_result(m.content);
      if (after_tool_result && format.joins_tool_results()) chat.back().content += "\n" + text;
      else chat.push_back({role, text});
      after_tool_result = true;
      continue;
    }
    after_tool_result = false;
    Message rendered{m.role, m.content};
    if (!m.tool_calls.empty())
      rendered.content = (m.content.empty() ? "" : m.content + "\n") + format.calls_text(m.tool_calls);
    chat.push_back(rendered);
  }
  if (shown.message) chat.insert(chat.begin(), Message{"system", shown.message(user_system)});
  else if (!user_system.empty()) chat.insert(chat.begin(), Message{"system", user_system});
  return chat;
}

// llama.cpp's built-in rendering of the template's family (a model without a Jinja template).
std::string render_built_in(const LoadedModel& model, const std::vector<Message>& chat) {
  std::vector<llama_chat_message> raw;
  for (const Message& m : chat) raw.push_back({m.role.c_str(), m.content.c_str()});
  const char* tmpl = model.chat_template.empty() ? nullptr : model.chat_template.c_str();
  std::string out(4096, '\0');
  int n = llama_chat_apply_template(tmpl, raw.data(), raw.size(), true, out.data(), int(out.size()));
  if (n > int(out.size())) {
    out.resize(size_t(n));
    n = llama_chat_apply_template(tmpl, raw.data(), raw.size(), true, out.data(), int(out.size()));
  }
  if (n < 0) throw Error("the model's chat template is not supported by llama.cpp's built-in templates");
  out.resize(size_t(n));
  return out;
}

}  // namespace

// What a call's prompt shows: the tools (see ShownTools) and the call's choices.
ShownTools shown_tools(const LoadedModel& model, const std::vector<ToolSpec>& tools, ToolsMessage message,
                       const CallOptions& options) {
  ShownTools shown;
  if (!tools.empty()) {
    shown.tools = &tools;
    shown.message = std::move(message);
  }
  shown.tool_choice = openai_name(options.tool_choice);
  shown.thinking = options.thinking_budget > 0;
  shown.template_variables = template_variables(model, options.template_kwargs);
  return shown;
}

// The conversation as the model's own chat template renders it, through llama.cpp's Jinja
// engine: with the tools, tool results and earlier calls as the template shows them where the
// template gives the call format; else with the library's instruction (with_instruction).
std::string render(const LoadedModel& model, const std::vector<Message>& messages, const ShownTools& shown) {
  for (const Message& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      throw Error("unknown message role '" + m.role + "'");
  }
  static const std::vector<ToolSpec> no_tools;
  TemplateOptions options;
  options.tool_choice = shown.tool_choice;
  options.parallel_tool_calls = model.format.parallel;
  options.enable_thinking = shown.thinking;
  options.template_kwargs = shown.template_variables;
  if (model.format.family == "template")
    return render_chat(*model.templates, messages, shown.tools ? *shown.tools : no_tools, options).prompt;
  const std::vector<Message> chat = with_instruction(model.format, messages, shown);
  if (!model.templates) return render_built_in(model, chat);
  return render_chat(*model.templates, chat, no_tools, options).prompt;
}

// How many of the prompt's tokens stay the same while the tools and the caller's system
// message do: the rendering of the system message and a user turn holding only a marker, up to
// the marker, tokenized, as far as it agrees with the prompt (a token may span the seam).
size_t tool_prefix_length(const LoadedModel& model, const std::vector<Message>& messages, const ShownTools& shown,
                          const std::vector<llama_token>& prompt) {
  static const std::string kMarker = "SCHEMAWEAVERPREFIXEND";
  std::vector<Message> probe;
  if (!messages.empty() && messages.front().role == "system") probe.push_back(messages.front());
  probe.push_back(Message{"user", kMarker});
  const std::string text = render(model, probe, shown);
  const size_t at = text.find(kMarker);
  if (at == std::string::npos) return 0;
  const std::vector<llama_token> tokens = model.tokenize(text.substr(0, at), true);
  size_t shared = 0;
  while (shared < tokens.size() && shared < prompt.size() && tokens[shared] == prompt[shared]) ++shared;
  return shared;
}

std::string render_prompt(const Model& model, const std::vector<Message>& messages,
                          const std::vector<ToolSpec>& tools, const CallOptions& options) {
  const LoadedModel& m = loaded(model);
  const ShownTools shown = shown_tools(
      m, tools, [&](const std::string& user_system) { return m.format.system_prompt(tools, user_system); }, options);
  return render(m, messages, shown);
}

}  // namespace sw
