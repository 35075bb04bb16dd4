// schemaweaver/openai.h - the OpenAI chat-completions protocol as `serve` speaks it: a request
// body parsed and checked into an engine call, a result turned into a response or the chunks of
// a stream.
//
// Extensions (standard clients ignore them): the request field "x_decoding_mode" picks the
// decoding mode ("schemaweaver" by default; "constrained", "jump-forward", "speculative", ...);
// stream chunks may carry "x_provisional_call" (a call to a read-only tool emitted before its
// optional arguments are decided) and "x_replaces_provisional" on the final call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schemaweaver/engine.h"

namespace sw::openai {

// A request the client got wrong: answered with status 400 and OpenAI's error body.
class RequestError : public Error {
 public:
  explicit RequestError(const std::string& message, std::string param = "", std::string code = "invalid_value")
      : Error(message), param_(std::move(param)), code_(std::move(code)) {}
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  std::string param_, code_;
};

// {"error": {"message", "type", "param", "code"}}
Json error_body(const std::string& message, const std::string& type, const std::string& param = "",
                const std::string& code = "");

// What one request may ask for at most.
struct Limits {
  size_t messages = 256;
  size_t tools = 128;
  int schema_depth = 16;
  int max_tokens = 1024;
};

// What a request gets for a field it leaves out, where the server sets it (serve's flags).
struct RequestDefaults {
  // x_repeated_calls "answer" for requests under tool_choice auto whose answer may be text (no
  // response_format) (serve --repeated-calls answer).
  bool answer_instead_of_repeating = false;
};

struct ChatRequest {
  std::string model;
  std::vector<Message> messages;
  std::vector<ToolSpec> tools;
  bool stream = false;
  // response_format json_schema or json_object where the answer may be other than a call: its
  // object is sent as the message's content. Under tool_choice auto with tools the model calls
  // or answers in it (the server compiles it as options.answer_schema); without tools or under
  // none it is the answer (compile_schema; tool_choice is then required).
  std::optional<ToolSpec> response_schema;
  // mode, max_tokens, tool_choice (auto, none, required; a named function is required with
  // options.tool set; required for an answer in a response schema alone), max_calls (1 when
  // parallel_tool_calls is false)
  CallOptions options;
};

// Throws RequestError naming the offending field for anything malformed, unknown or over a
// limit (wrong types, an unknown role, an invalid schema, tool_choice naming an absent tool).
ChatRequest parse_chat_request(const Json& body, const Limits& limits = {}, const RequestDefaults& defaults = {});
// A request's "messages": a non-empty list of OpenAI chat messages (content as text or text
// parts; an assistant's tool_calls; a tool's tool_call_id). Throws RequestError as above.
std::vector<Message> parse_messages(const Json& messages, const Limits& limits = {});
// The same from the body's text, which must also be valid UTF-8 and valid JSON.
ChatRequest parse_chat_request(const std::string& body, const Limits& limits = {},
                               const RequestDefaults& defaults = {});

// An answer that must not be reported as a success, as an error response: a call that is not
// valid (it breaks the schema, cannot be parsed, or max_tokens cut it off) is status 422 with
// code "invalid_tool_call" or "max_tokens_reached" (a 4xx: clients do not retry it, and greedy
// decoding would write the same again). Null status when the answer is a valid call or a reply
// in text the request allowed.
struct ErrorResponse {
  int status = 0;
  Json body;
};
ErrorResponse failed_answer(const CallResult& result);
// An answer in a response schema as OpenAI sends it: the object's text as the message's content
// (finish_reason "stop", or "length" where max_tokens cut it), no tool calls, no call events.
void schema_answer_as_content(CallResult& result);
// A request that ran past the server's time limit: 504, code "timeout".
ErrorResponse timed_out();

// The id OpenAI clients expect on a tool call ("call_" and 24 characters).
std::string call_id(const std::string& completion_id, size_t index);

// A whole response: the calls as tool_calls with finish_reason "tool_calls", or the text as
// the message content with finish_reason "stop" ("length" when max_tokens cut it); with
// thinking on, what the model reasoned as reasoning_content (llama-server's field).
Json completion(const std::string& id, const std::string& model, long created, const CallResult& result);

// Stream chunks ("chat.completion.chunk"): the first carries the role, the reasoning (thinking
// on) then arrives as one reasoning_content delta, a reply in text (or an answer in a response
// schema) as content deltas as it is decided, each call as tool_calls deltas (CallChunks), the
// last carries finish_reason and usage.
Json role_chunk(const std::string& id, const std::string& model, long created);
// A call event as one chunk: a provisional call in the field x_provisional_call, a final one
// whole, as one tool_calls delta.
Json call_chunk(const std::string& id, const std::string& model, long created, const CallEvent& event);
Json text_chunk(const std::string& id, const std::string& model, long created, const std::string& text);
Json reasoning_chunk(const std::string& id, const std::string& model, long created, const std::string& reasoning);
Json final_chunk(const std::string& id, const std::string& model, long created, const CallResult& result);

// The tool_calls deltas of one streamed response, in OpenAI's shape, which a client's stream
// accumulator joins into the whole response's calls: a call's first delta carries its index, id,
// type and name, the next ones pieces of its arguments as the engine decides them (CallDelta);
// its final event adds what no delta told (everything, where none came: free mode, tagged
// arguments). A provisional call is a chunk of its own (call_chunk).
class CallChunks {
 public:
  CallChunks(std::string id, std::string model, long created)
      : id_(std::move(id)), model_(std::move(model)), created_(created) {}
  // The chunk of a delta; null for a delta of a call whose final event came first.
  Json delta(const CallDelta& delta);
  // The chunk of an event; null for a final event with nothing left to tell. Throws Error if
  // the told arguments are not the beginning of the final call's (the stream cannot take back).
  Json event(const CallEvent& event);

 private:
  struct Told {
    bool started = false, finished = false;
    std::string arguments;
  };
  Told& told(int index);
  Json tool_calls(Json call) const;

  std::string id_, model_;
  long created_;
  std::vector<Told> calls_;
};

}  // namespace sw::openai
