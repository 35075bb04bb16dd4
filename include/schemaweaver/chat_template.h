// A model's own chat template, run by llama.cpp's Jinja engine, and llama.cpp's own parser of the
// calls that template's model writes - what stock llama-server renders and parses for the same
// GGUF. The reference a prompt and a call can be checked against (`schemaweaver parse`).
//
//   sw::ModelParams params;
//   params.path = "qwen3.gguf";
//   params.vocab_only = true;  // the tokenizer and template suffice
//   auto model = sw::Model::load(params);
//   sw::ChatTemplate chat(*model);
//   sw::ChatTemplate::Rendered r = chat.render({{"user", "Weather in Paris?"}}, tools, {});
//   sw::ParsedOutput parsed = chat.parse("<tool_call>\n{\"name\": ...}\n</tool_call>", r);
//
// Thread safety: a ChatTemplate is immutable after construction; render and parse may run on
// several threads at once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "schemaweaver/engine.h"
#include "schemaweaver/tools.h"

namespace sw {

struct TemplateOptions {
  std::string tool_choice = "auto";  // "auto", "required" or "none", as OpenAI's requests say it
  bool parallel_tool_calls = true;   // several calls in one turn
  bool enable_thinking = false;      // a reasoning template's thinking block (off: the empty block)
  std::map<std::string, std::string> template_kwargs;  // extra template variables, each a JSON value's text
};

// What llama.cpp's parser reads from a model's output.
struct ParsedOutput {
  std::string content;            // text outside the calls and the reasoning
  std::string reasoning_content;  // a reasoning block's text
  std::vector<ToolCall> calls;
};

class ChatTemplate {
 public:
  // The model's template (its GGUF's tokenizer.chat_template), or `source` when not empty (a
  // template's Jinja text). Throws Error when the template cannot be read (a syntax error).
  explicit ChatTemplate(const Model& model, const std::string& source = "");
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // A rendered prompt and how its answer is to be read back.
  struct Rendered {
    std::string prompt;             // the whole prompt text, generation prompt included
    std::string syntax;             // llama.cpp's name of the call format it derived ("peg-native", ...)
    std::string generation_prompt;  // the prompt's last part, the assistant's opening
    bool supports_thinking = false;
    std::string parser;             // llama.cpp's parser for this template and these tools (serialized)
  };
  // Throws Error when the template fails on these messages (e.g. roles it does not allow).
  Rendered render(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools,
                  const TemplateOptions& options) const;
  // The same for the messages of an OpenAI request (a JSON list) read by llama.cpp's own reader,
  // as llama-server reads them: the reference for how this library reads a conversation. Throws
  // Error when llama.cpp refuses the messages or the template fails on them.
  Rendered render_openai(const Json& openai_messages, const std::vector<ToolSpec>& tools,
                         const TemplateOptions& options) const;
  // Reads a model's output to a prompt `rendered` made. Throws Error when llama.cpp's parser
  // refuses the output (what llama-server answers with an error).
  ParsedOutput parse(const std::string& output, const Rendered& rendered) const;

  const std::string& source() const;  // the template's Jinja text

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sw
