// `parse`: a model's output read by llama.cpp's own parser for the model's chat template, as
// stock llama-server reads it - the oracle any output (ours or another engine's) can be checked
// against. The prompt is rendered first (with the tools and messages given): the parser llama.cpp
// derives depends on them.
#include <iostream>
#include <iterator>

#include "common.h"
#include "schemaweaver/chat_template.h"

namespace cli {

void add_parse_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "parse", "read a model's output with llama.cpp's parser for its chat template; print the calls as JSON");
  struct Options {
    std::string model_path;
    std::string template_path;
    std::string tools_path;
    std::string prompt = "Hello";
    std::string messages_path;
    std::string output_path;
    sw::TemplateOptions chat;
    bool print_prompt = false;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("-m,--model", o->model_path, "GGUF model file (its tokenizer and chat template are read)")->required();
  cmd->add_option("--chat-template", o->template_path, "a Jinja chat template file used instead of the model's");
  cmd->add_option("--tools", o->tools_path, "tools JSON file the prompt offered (OpenAI, MCP or BFCL style)");
  cmd->add_option("-p,--prompt", o->prompt, "the user's message the output answers")->capture_default_str();
  cmd->add_option("--messages", o->messages_path,
                  "the conversation the output answers instead of -p: a JSON list of OpenAI chat messages, read by "
                  "llama.cpp's own reader of them, as llama-server reads a request");
  cmd->add_option("--tool-choice", o->chat.tool_choice, "auto, required or none")
      ->check(CLI::IsMember({"auto", "required", "none"}))
      ->capture_default_str();
  cmd->add_flag("--thinking", o->chat.enable_thinking, "the prompt had thinking on (a reasoning template)");
  cmd->add_flag("--print-prompt", o->print_prompt, "print the rendered prompt to stderr");
  cmd->add_option("output", o->output_path, "file holding the model's output (default: standard input)");
  cmd->callback([o] {
    sw::ModelParams params;
    params.path = o->model_path;
    params.vocab_only = true;  // the tokenizer and the template suffice
    auto model = sw::Model::load(params);
    sw::ChatTemplate chat(*model, o->template_path.empty() ? "" : read_file(o->template_path));
    std::vector<sw::ToolSpec> tools;
    if (!o->tools_path.empty()) tools = sw::parse_tools(read_json_file(o->tools_path));
    sw::ChatTemplate::Rendered rendered = o->messages_path.empty()
                                              ? chat.render({{"user", o->prompt}}, tools, o->chat)
                                              : chat.render_openai(read_json_file(o->messages_path), tools, o->chat);
    if (o->print_prompt) std::cerr << rendered.prompt << "\n";
    const std::string output = o->output_path.empty()
                                   ? std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>())
                                   : read_file(o->output_path);
    sw::ParsedOutput parsed = chat.parse(output, rendered);
    sw::Json calls = sw::Json::array();
    for (const sw::ToolCall& call : parsed.calls) calls.push_back(call.to_json());
    std::cout << sw::dump_json({{"syntax", rendered.syntax},
                                {"content", parsed.content},
                                {"reasoning_content", parsed.reasoning_content},
                                {"tool_calls", calls}})
              << "\n";
  });
}

}  // namespace cli
