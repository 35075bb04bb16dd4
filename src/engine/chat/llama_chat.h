// The one door to llama.cpp's chat library (common/chat.h: its Jinja engine, the template
// analysis that derives a model's call syntax, the PEG parser that reads calls back). Plain
// standard types only: that library is built with its own copy of nlohmann::json, another version
// than the project's, so no JSON object crosses this door - JSON travels as text.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

struct llama_model;

namespace sw::llama_chat {

struct Call {
  std::string name;
  std::string arguments;  // a JSON object's text
  std::string id;
};

struct Message {
  std::string role;
  std::string content;
  std::string reasoning_content;
  std::vector<Call> calls;
  std::string tool_call_id;
};

struct Tool {
  std::string name;
  std::string description;
  std::string parameters;  // a JSON schema's text
};

struct Request {
  std::vector<Message> messages;
  // Where not empty, the messages instead: an OpenAI request's "messages" as JSON text, read by
  // llama.cpp's own reader of them, as llama-server reads a request (the reference our reading
  // of a conversation - its calls, their ids, tool results - is checked against).
  std::string openai_messages;
  std::vector<Tool> tools;
  std::string tool_choice = "auto";  // auto, required, none
  bool parallel_tool_calls = true;
  bool enable_thinking = false;
  std::map<std::string, std::string> template_kwargs;  // name -> a JSON value's text
};

// What llama.cpp's template analysis (common/chat-auto-parser) reads from a template about its
// calls, with the template's own rendering of a sample turn of two calls (one if the template
// writes one call a turn) - the exact text between the markers, which the analysis trims.
struct CallAnalysis {
  std::string mode;             // "NONE", "JSON_NATIVE", "TAG_WITH_JSON", "TAG_WITH_TAGGED"
  bool specialized = false;     // llama.cpp reads this template with a handler of its own, not the analysis
  bool supports_tools = false;  // the template renders the tools it is given
  bool parallel = false;        // and writes several calls in one turn
  std::string section_start, section_end, call_start, call_end;  // around all calls, around each
  bool list = false;                  // the calls are the items of one JSON list
  bool name_is_key = false;           // {"<name>": {arguments}}
  bool id_in_markers = false;         // a call id between markers of its own ([CALL_ID]...)
  std::string name_field, args_field;  // JSON_NATIVE: the keys of the name and the arguments
  std::string name_prefix, name_suffix, args_separator;  // TAG_WITH_JSON: around the name, as written
  std::string close;                                    // after the arguments, trimmed
  // TAG_WITH_TAGGED: each argument as arg_name_prefix NAME arg_name_suffix arg_value_prefix VALUE
  // arg_value_suffix, joined by arg_separator, between args_start and args_end; as written, untrimmed.
  std::string args_start, args_end, arg_name_prefix, arg_name_suffix, arg_value_prefix, arg_value_suffix,
      arg_separator;
  // The assistant turn the template renders for the sample calls: kSampleNames[i] with the
  // arguments kSampleArguments[i] (JSON text) and the id kSampleIds[i].
  std::string sample;
  static constexpr const char* kSampleNames[2] = {"sw_first_tool", "sw_second_tool"};
  static constexpr const char* kSampleArguments[2] = {"{\"alpha\": \"x\"}", "{\"beta\": 7}"};
  static constexpr const char* kSampleIds[2] = {"call00000", "call00001"};  // 9 characters, as Mistral's require
};

// A reasoning template's thinking block as the template writes it in an assistant turn, after
// the generation prompt with thinking on: `opener` REASONING `close` CONTENT. `end` is the marker
// within `close` that a model writes to end its reasoning ("</think>"). All empty: the template
// has no such block (or does not show a turn's reasoning).
struct ReasoningBlock {
  std::string opener, close, end;
  // The template's generation prompt opens the block whether thinking is on or not (MiniMax-M2):
  // thinking off is then a block closed at once, empty.
  bool always_open = false;
  // llama.cpp's parser keeps the whitespace a model's reasoning begins with (gpt-oss), rather
  // than trimming it (Qwen3).
  bool keeps_leading_space = false;
};

struct Rendered {
  std::string prompt;
  std::string syntax;  // llama.cpp's name of the chat format (common_chat_format_name)
  std::string generation_prompt;
  bool supports_thinking = false;
  std::string parser;  // the PEG parser, serialized
};

class Templates {
 public:
  // Throws std::runtime_error (llama.cpp's own exceptions) when the template does not parse.
  Templates(const llama_model* model, const std::string& source_override);
  ~Templates();
  Rendered render(const Request& request) const;
  // Throws std::exception when llama.cpp's parser refuses the output.
  Message parse(const std::string& output, const Rendered& rendered) const;
  std::string source() const;
  // Throws std::exception when the analysis fails on this template.
  CallAnalysis analyze() const;
  // Whether llama.cpp's parser for this template reads `turn` (an assistant turn's text) as the
  // first `calls` sample calls of CallAnalysis, no more and no less.
  bool reads_as_sample(const std::string& turn, int calls) const;
  ReasoningBlock reasoning_block() const;

 private:
  // The reasoning llama.cpp's parser reads in an answer `turn` to a request with thinking on
  // ("" where it reads none or refuses the turn).
  std::string reads_reasoning(const std::string& turn) const;
  struct Handle;
  std::unique_ptr<Handle> handle_;
};

}  // namespace sw::llama_chat
