// How a model family writes tool calls: the text around the calls and each call's pieces, the
// variants a turn is decoded in (a list, the form a model opened), and reading free output back
// into calls (read.cpp). Where the syntax comes from: the model's template (derive.cpp) or the
// library's own formats; the library's instructions that show the tools live in chat/.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/format/notation.h"

namespace sw {

namespace llama_chat {
struct CallAnalysis;
struct ReasoningBlock;
class Templates;
}

// A call's text is  name_prefix NAME name_suffix args_prefix ARGUMENTS [id_prefix ID] call_suffix,
// and a turn's  opener CALL (separator CALL)* closer.
struct CallFormat {
  std::string name;       // "template", "smollm2", "hermes", "json", ...
  // Who shows the model its tools and tool results: "template" (the model's own chat template),
  // else the instruction this library writes for the family "smollm2", "hermes" or "json".
  std::string family;
  std::string opener;     // before the first call
  std::string separator;  // between two calls
  std::string closer;     // after the last call
  std::string call_start, call_end;  // the markers around each call, or around the turn's block ("" if none)
  std::string section_start;         // the marker before a turn's calls ("" if none)
  // The marker whose appearance in free output opens a turn of calls.
  const std::string& call_marker() const { return section_start.empty() ? call_start : section_start; }
  std::string name_prefix = "{\"name\": \"";
  std::string name_suffix = "\"";  // never empty: it ends the name (one name may begin another)
  std::string args_prefix = ", \"arguments\": ";
  std::string call_suffix = "}";
  // Calls that end with an id of the model's choice (Mistral's `, "id": "a1b2c3d4e"}`): after the
  // arguments object come id_prefix, a JSON string of id_length letters and digits, call_suffix.
  std::string id_prefix;
  int id_length = 0;
  bool json_call = true;   // the whole call is one JSON object: {"<name_field>": ..., "<args_field>": ...}
  std::string name_field = "name", args_field = "arguments";
  ArgumentSyntax arguments;  // how the arguments are written (JSON for every json_call format)
  bool parallel = true;    // a turn may hold several calls
  bool list = false;       // the turn's calls are one JSON list
  // False for an answer in a schema (schema_answer): the call is its arguments object alone,
  // of its set's one tool, whose name is never written.
  bool named = true;
  // Why the model's template did not give the format, when the model's own was asked for and
  // this is the library's fallback ("" otherwise).
  std::string fallback_reason;

  // The system message that lists the tools, as the model was trained to read them (not for
  // the "template" family: its template shows them). `user_system`: the caller's own ("" if none).
  std::string system_prompt(const std::vector<ToolSpec>& tools, const std::string& user_system) const;

  // The text that names a call's tool: name_prefix NAME name_suffix ("" where calls are not named).
  std::string name_text(const std::string& tool) const { return named ? name_prefix + tool + name_suffix : ""; }
  // A call's text up to its arguments object: its name's text, args_prefix.
  std::string call_head(const std::string& tool) const { return name_text(tool) + args_prefix; }
  // The text of one call and of a turn that made these calls, as the model writes them.
  std::string call_text(const ToolCall& call) const;
  std::string calls_text(const std::vector<ToolCall>& calls) const;
  // A tool's result as the model was trained to read it: the role of its message and its text.
  std::pair<std::string, std::string> tool_result(const std::string& content) const;
  // Whether consecutive results share one message (their texts joined by a newline).
  bool joins_tool_results() const;
  // The text whose appearance ends a call in free output.
  const std::string& free_stop() const { return call_end.empty() ? closer : call_end; }

  // Parses a model's free output; `tools` give the kinds of tagged values. Throws Error with a
  // short reason when it holds no call.
  std::vector<ToolCall> parse(const std::string& text, const std::vector<ToolSpec>& tools = {}) const;
  // The arguments of one call whose arguments begin at `begin` in `text` (after call_head), and
  // one past their end. Throws Error when they are not complete or do not read.
  std::pair<Json, size_t> arguments_at(const std::string& text, size_t begin, const ToolSpec* tool) const;
  // The text whose appearance ends a call, where calls are not JSON objects ("" where they are).
  std::string call_close_marker() const;

  // The format whose turn is one JSON list of calls: itself where it already is one, else the
  // list in the format's per-call markers ("hermes-list" for hermes). Throws Error for a format
  // whose calls are not JSON objects or that has no markers to hold a list.
  CallFormat as_list() const;
  // The format of calls a model began as JSON outside its markers (decode/opening.h): after
  // `fence` ("```json\n", or "" for bare JSON), one call or, `in_list`, a JSON list of them -
  // and then the fence's end, which ends the turn; each call's JSON is the format's own. Throws
  // Error for a format whose calls are not JSON objects.
  CallFormat opened_as(const std::string& fence, bool in_list) const;

  static CallFormat by_name(const std::string& name);  // throws Error on an unknown name
  // An answer that is one JSON object of a schema (OpenAI's structured outputs): no markers, no
  // name, one "call" whose arguments are the object - so that every mode decodes it as it
  // decodes a call's arguments (SchemaWeaver: its properties in parallel branches).
  static CallFormat schema_answer();
  // The syntaxes of llama.cpp's handlers of its own written here, which derive() tries where the
  // template's analysis gives none that handler reads: LFM2's python-like calls and Gemma 4's.
  static CallFormat python_like_calls();
  static CallFormat gemma4_calls();
  // The format llama.cpp's analysis of the model's template describes, where llama.cpp's parser
  // for the template reads the format's text of sample calls back into those calls (one call a
  // turn where it reads no more); else a format of this library's, with fallback_reason set
  // (`templates`: the model's, `reasoning`: its thinking block).
  // `has_tool_call_token`: "<tool_call>" is one token of the vocabulary.
  static CallFormat derive(const llama_chat::CallAnalysis& analysis, const llama_chat::Templates& templates,
                           const llama_chat::ReasoningBlock& reasoning, const std::string& chat_template,
                           bool has_tool_call_token);
  // The library's own choice from the template's text (for a model without a usable template).
  static CallFormat detect(const std::string& chat_template, bool has_tool_call_token);
};

}  // namespace sw
