#include "schemaweaver/openai.h"

#include <cstdio>
#include <cstdint>
#include <functional>

#include "util/utf8.h"

namespace sw::openai {
namespace {

std::string at(const std::string& path, size_t index) { return path + "[" + std::to_string(index) + "]"; }

const Json& require(const Json& object, const char* key, const std::string& path) {
  if (!object.contains(key)) throw RequestError("'" + path + "." + key + "' is required", path + "." + key, "missing");
  return object.at(key);
}

std::string require_string(const Json& object, const char* key, const std::string& path) {
  const Json& value = require(object, key, path);
  if (!value.is_string()) throw RequestError("'" + path + "." + key + "' must be a string", path + "." + key);
  return value.get<std::string>();
}

// Content is a string, null, or a list of text parts.
std::string content_text(const Json& content, const std::string& path) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw RequestError("'" + path + "' must be a string or a list of parts", path);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    if (!part.is_object() || part.value("type", Json()) != "text" || !part.contains("text") || !part["text"].is_string())
      throw RequestError("'" + at(path, i) + "': only text parts are supported", at(path, i));
    text += part["text"].get<std::string>();
  }
  return text;
}

std::vector<ToolCall> message_calls(const Json& calls, const std::string& path) {
  if (!calls.is_array()) throw RequestError("'" + path + "' must be a list", path);
  std::vector<ToolCall> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    std::string where = at(path, i);
    if (!calls[i].is_object()) throw RequestError("'" + where + "' must be an object", where);
    const Json& function = require(calls[i], "function", where);
    if (!function.is_object()) throw RequestError("'" + where + ".function' must be an object", where + ".function");
    ToolCall call;
    call.name = require_string(function, "name", where + ".function");
    if (calls[i].contains("id") && !calls[i]["id"].is_null()) call.id = require_string(calls[i], "id", where);
    Json arguments = Json::parse(require_string(function, "arguments", where + ".function"), nullptr, false);
    if (!arguments.is_object())
      throw RequestError("'" + where + ".function.arguments' must be a JSON object in a string",
                         where + ".function.arguments");
    call.arguments = std::move(arguments);
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace

std::vector<Message> parse_messages(const Json& list, const Limits& limits) {
  if (!list.is_array() || list.empty()) throw RequestError("'messages' must be a non-empty list", "messages");
  if (list.size() > limits.messages)
    throw RequestError("'messages' has " + std::to_string(list.size()) + " entries; the limit is " +
                       std::to_string(limits.messages), "messages", "too_many");
  std::vector<Message> messages;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = at("messages", i);
    if (!list[i].is_object()) throw RequestError("'" + path + "' must be an object", path);
    Message m;
    m.role = require_string(list[i], "role", path);
    if (m.role == "developer") m.role = "system";
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      throw RequestError("'" + path + ".role' is '" + m.role + "'; known: system, developer, user, assistant, tool",
                         path + ".role");
    m.content = content_text(list[i].contains("content") ? list[i]["content"] : Json(), path + ".content");
    if (m.role == "assistant" && list[i].contains("tool_calls") && !list[i]["tool_calls"].is_null())
      m.tool_calls = message_calls(list[i]["tool_calls"], path + ".tool_calls");
    if (m.role == "assistant" && list[i].contains("reasoning_content") && !list[i]["reasoning_content"].is_null())
      m.reasoning_content = require_string(list[i], "reasoning_content", path);
    if (m.role == "tool") m.tool_call_id = require_string(list[i], "tool_call_id", path);
    messages.push_back(std::move(m));
  }
  return messages;
}

namespace {

int depth(const Json& value) {
  int deepest = 0;
  if (value.is_object() || value.is_array()) {
    for (const Json& child : value) deepest = std::max(deepest, depth(child));
    return deepest + 1;
  }
  return 0;
}

std::vector<ToolSpec> parse_tool_list(const Json& body, const Limits& limits) {
  if (!body.contains("tools") || body["tools"].is_null()) return {};
  const Json& tools = body["tools"];
  if (!tools.is_array()) throw RequestError("'tools' must be a list", "tools");
  if (tools.size() > limits.tools)
    throw RequestError("'tools' has " + std::to_string(tools.size()) + " entries; the limit is " +
                       std::to_string(limits.tools), "tools", "too_many");
  for (size_t i = 0; i < tools.size(); ++i) {
    if (!tools[i].is_object() || tools[i].value("type", Json()) != "function" || !tools[i].contains("function"))
      throw RequestError("'" + at("tools", i) + "' must be {\"type\": \"function\", \"function\": {...}}", at("tools", i));
    if (depth(tools[i]) > limits.schema_depth + 2)
      throw RequestError("'" + at("tools", i) + "' nests deeper than " + std::to_string(limits.schema_depth) +
                         " levels", at("tools", i), "too_deep");
  }
  if (tools.empty()) return {};
  try {
    return parse_tools(tools);
  } catch (const Error& e) {
    throw RequestError(std::string("'tools': ") + e.what(), "tools");
  }
}

void parse_tool_choice(const Json& body, ChatRequest& request) {
  ToolChoice& choice_made = request.options.tool_choice;
  if (!body.contains("tool_choice") || body["tool_choice"].is_null()) {
    choice_made = request.tools.empty() ? ToolChoice::None : ToolChoice::Auto;
    return;
  }
  const Json& choice = body["tool_choice"];
  if (choice == "auto") choice_made = ToolChoice::Auto;
  else if (choice == "none") choice_made = ToolChoice::None;
  else if (choice == "required") choice_made = ToolChoice::Required;
  else if (choice.is_object() && choice.value("type", Json()) == "function" && choice.contains("function") &&
           choice["function"].is_object() && choice["function"].contains("name") &&
           choice["function"]["name"].is_string()) {
    choice_made = ToolChoice::Required;
    request.options.tool = choice["function"]["name"].get<std::string>();
    bool known = false;
    for (const ToolSpec& t : request.tools) known = known || t.name == request.options.tool;
    if (!known) throw RequestError("'tool_choice' names '" + request.options.tool + "', which is not in 'tools'", "tool_choice");
  } else {
    throw RequestError("'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", "
                       "\"function\": {\"name\": ...}}", "tool_choice");
  }
  if (choice_made == ToolChoice::Required && request.tools.empty())
    throw RequestError("'tool_choice' asks for a tool call but 'tools' is empty", "tool_choice");
}

bool optional_bool(const Json& body, const char* key, bool fallback) {
  if (!body.contains(key) || body[key].is_null()) return fallback;
  if (!body[key].is_boolean()) throw RequestError(std::string("'") + key + "' must be true or false", key);
  return body[key].get<bool>();
}

int parse_max_tokens(const Json& body, const Limits& limits) {
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    if (!body.contains(key) || body[key].is_null()) continue;
    const Json& value = body[key];
    if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > limits.max_tokens)
      throw RequestError(std::string("'") + key + "' must be an integer from 1 to " + std::to_string(limits.max_tokens),
                         key);
    return value.get<int>();
  }
  return std::min(256, limits.max_tokens);
}

// The chat template's variables, as llama-server takes them (chat_template_kwargs): all but
// enable_thinking go to the template as they are.
Json parse_template_kwargs(const Json& body) {
  if (!body.contains("chat_template_kwargs") || body["chat_template_kwargs"].is_null()) return Json::object();
  const Json& kwargs = body["chat_template_kwargs"];
  if (!kwargs.is_object()) throw RequestError("'chat_template_kwargs' must be an object", "chat_template_kwargs");
  Json others = kwargs;
  others.erase("enable_thinking");
  return others;
}

// A reasoning template's thinking, as llama-server takes it: chat_template_kwargs'
// enable_thinking, and a budget in tokens (thinking_budget_tokens or reasoning_budget_tokens;
// -1 or none: as many as max_tokens). A budget alone does not turn thinking on.
int parse_thinking_budget(const Json& body, int max_tokens) {
  bool enabled = false;
  if (body.contains("chat_template_kwargs") && body["chat_template_kwargs"].is_object())
    enabled = optional_bool(body["chat_template_kwargs"], "enable_thinking", false);
  int budget = -1;
  for (const char* key : {"thinking_budget_tokens", "reasoning_budget_tokens"}) {
    if (!body.contains(key) || body[key].is_null()) continue;
    const Json& value = body[key];
    if (!value.is_number_integer() || value.get<long long>() < -1 || value.get<long long>() > max_tokens)
      throw RequestError(std::string("'") + key + "' must be an integer from -1 to max_tokens (" +
                             std::to_string(max_tokens) + ")",
                         key);
    budget = value.get<int>();
  }
  if (!enabled) return 0;
  return budget < 0 ? max_tokens : budget;
}

Json tool_call_json(const std::string& id, const ToolCall& call) {
  return {{"id", id}, {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", dump_json(call.arguments)}}}};
}

Json chunk(const std::string& id, const std::string& model, long created, Json delta, Json finish = nullptr) {
  return {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
          {"choices", Json::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}})}};
}

std::string finish_reason(const CallResult& result) {
  if (!result.calls.empty()) return "tool_calls";
  return result.stopped_at_max_tokens ? "length" : "stop";
}

// OpenAI's usage; the prompt's tokens taken from the cache (the KV cache or the prompt cache on
// disk) as its cached_tokens.
Json usage(const CallResult& result) {
  return {{"prompt_tokens", result.stats.prompt_tokens}, {"completion_tokens", result.stats.sampled_tokens},
          {"total_tokens", result.stats.prompt_tokens + result.stats.sampled_tokens},
          {"prompt_tokens_details", {{"cached_tokens", result.stats.prompt_reused_tokens}}}};
}

// Calls the model wrote that repeat answered ones, and whether the answer is text instead
// (x_repeated_calls "answer").
Json repeats(const CallResult& result) {
  return {{"calls", result.stats.repeated_calls}, {"answered_instead", result.answered_instead_of_repeating}};
}

// Where the engine's time went (an extension, as llama-server's "timings"): the prompt's
// prefill, the answer after it, and when its calls could be executed.
Json timings(const CallResult& result) {
  const CallStats& s = result.stats;
  return {{"prompt_ms", s.prompt_ms}, {"prompt_tokens", s.prompt_tokens}, {"prompt_reused_tokens", s.prompt_reused_tokens},
          {"prompt_restored_tokens", s.prompt_restored_tokens}, {"answer_ms", s.call_ms},
          {"answer_passes", s.call_passes}, {"executable_ms", s.executable_ms}};
}


// A number field within [low, high]; `fallback` when absent or null.
double optional_number(const Json& body, const char* key, double fallback, double low, double high) {
  if (!body.contains(key) || body[key].is_null()) return fallback;
  const Json& value = body[key];
  if (!value.is_number() || value.get<double>() < low || value.get<double>() > high)
    throw RequestError(std::string("'") + key + "' must be a number from " + dump_json(low) + " to " + dump_json(high),
                       key);
  return value.get<double>();
}

// Sampling as OpenAI and llama-server take it: temperature (0, the default here, is greedy - not
// OpenAI's 1), top_p, and llama-server's top_k and min_p, with llama-server's defaults; seed.
Sampling parse_sampling(const Json& body) {
  Sampling s;
  s.temperature = float(optional_number(body, "temperature", 0, 0, 2));
  s.top_p = float(optional_number(body, "top_p", s.top_p, 0, 1));
  if (s.top_p == 0) s.top_p = 1e-6f;  // OpenAI allows 0: the most likely token alone
  s.min_p = float(optional_number(body, "min_p", s.min_p, 0, 0.999));
  s.top_k = int(optional_number(body, "top_k", s.top_k, 0, 1e9));
  if (body.contains("top_k") && body["top_k"].is_number() && !body["top_k"].is_number_integer())
    throw RequestError("'top_k' must be an integer", "top_k");
  if (body.contains("seed") && !body["seed"].is_null()) {
    if (!body["seed"].is_number_integer()) throw RequestError("'seed' must be an integer", "seed");
    s.seed = uint64_t(body["seed"].get<int64_t>());
  }
  return s;
}

// Parameters that say what the answer must be, which this engine cannot give: refused by name
// rather than ignored, so that no client takes an answer for the one it asked for.
void refuse_what_cannot_be_honoured(const Json& body) {
  auto given = [&](const char* key) { return body.contains(key) && !body[key].is_null(); };
  for (const char* penalty : {"presence_penalty", "frequency_penalty"}) {
    if (given(penalty) && body[penalty] != 0)
      throw RequestError(std::string(penalty) + " is not supported (only 0)", penalty, "unsupported_parameter");
  }
  if (given("repeat_penalty") && body["repeat_penalty"] != 1)
    throw RequestError("repeat_penalty is not supported (only 1)", "repeat_penalty", "unsupported_parameter");
  if (given("logit_bias") && !(body["logit_bias"].is_object() && body["logit_bias"].empty()))
    throw RequestError("logit_bias is not supported", "logit_bias", "unsupported_parameter");
}

// OpenAI's logprobs (true or false) and top_logprobs (0 to 20, with logprobs only), as
// CallOptions::logprobs: -1 where none are asked for.
int parse_logprobs(const Json& body) {
  const bool asked = body.contains("logprobs") && !body["logprobs"].is_null();
  if (asked && !body["logprobs"].is_boolean()) throw RequestError("'logprobs' must be true or false", "logprobs");
  const int top = int(optional_number(body, "top_logprobs", 0, 0, 20));
  if (body.contains("top_logprobs") && body["top_logprobs"].is_number() && !body["top_logprobs"].is_number_integer())
    throw RequestError("'top_logprobs' must be an integer", "top_logprobs");
  const bool on = asked && body["logprobs"].get<bool>();
  if (!on && body.contains("top_logprobs") && !body["top_logprobs"].is_null())
    throw RequestError("'top_logprobs' needs 'logprobs' true", "top_logprobs");
  return on ? top : -1;
}

// OpenAI's stop: a string or a list of up to 4, each non-empty; a reply in text ends before the
// first it writes (a call is never cut).
std::vector<std::string> parse_stop(const Json& body) {
  if (!body.contains("stop") || body["stop"].is_null()) return {};
  const Json& stop = body["stop"];
  const Json list = stop.is_string() ? Json::array({stop}) : stop;
  if (!list.is_array() || list.size() > 4)
    throw RequestError("'stop' must be a string or a list of at most 4 strings", "stop");
  std::vector<std::string> out;
  for (const Json& s : list) {
    if (!s.is_string() || s.get<std::string>().empty())
      throw RequestError("'stop' must hold non-empty strings", "stop");
    out.push_back(s.get<std::string>());
  }
  return out;
}

// response_format json_schema's schema, read as an answer's one tool.
ToolSpec read_json_schema_format(const Json& format, const Limits& limits) {
  const Json& spec = require(format, "json_schema", "response_format");
  if (!spec.is_object()) throw RequestError("'response_format.json_schema' must be an object", "response_format.json_schema");
  const std::string name = require_string(spec, "name", "response_format.json_schema");
  if (spec.contains("strict") && !spec["strict"].is_null() && !spec["strict"].is_boolean())
    throw RequestError("'response_format.json_schema.strict' must be true or false", "response_format.json_schema.strict");
  const std::string where = "response_format.json_schema.schema";
  const Json& schema = require(spec, "schema", "response_format.json_schema");
  if (depth(schema) > limits.schema_depth)
    throw RequestError("'" + where + "' nests deeper than " + std::to_string(limits.schema_depth) + " levels", where,
                       "too_deep");
  try {
    return parse_response_schema(schema, name);
  } catch (const Error& e) {
    throw RequestError(std::string("'") + where + "': " + e.what(), where);
  }
}

// OpenAI's response_format: text (the default), json_schema - the answer is one JSON object of
// the schema where no call is made - or json_object, an object of any keys (the schema
// {"type": "object"}).
void parse_response_format(const Json& body, const Limits& limits, ChatRequest& request) {
  if (!body.contains("response_format") || body["response_format"].is_null()) return;
  const Json& format = body["response_format"];
  if (!format.is_object() || !format.contains("type") || !format["type"].is_string())
    throw RequestError("'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                       "{\"type\": \"json_schema\", ...}",
                       "response_format");
  const std::string type = format["type"].get<std::string>();
  if (type == "text") return;
  ToolSpec answer;
  if (type == "json_object") {
    answer = parse_response_schema(Json{{"type", "object"}}, "json_object");
  } else if (type == "json_schema") {
    answer = read_json_schema_format(format, limits);
  } else {
    throw RequestError("'response_format.type' is '" + type + "'; known: text, json_object, json_schema",
                       "response_format.type");
  }
  ToolChoice& choice = request.options.tool_choice;
  if (choice == ToolChoice::Required) return;  // a call: the answer has no content to shape
  request.response_schema = std::move(answer);
  if (!request.tools.empty() && choice == ToolChoice::Auto) return;  // a call, or the schema's object
  choice = ToolChoice::Required;  // the schema's object is the answer
}

// A token's text and bytes as OpenAI's logprobs give them (the text may hold a piece of a
// character: the bytes are exact).
Json token_json(const std::string& token, float logprob) {
  Json bytes = Json::array();
  for (unsigned char c : token) bytes.push_back(int(c));
  return {{"token", token}, {"logprob", logprob}, {"bytes", bytes}};
}

// choices[0].logprobs: a reply in text's tokens, or null.
Json logprobs_json(const CallResult& result) {
  if (result.logprobs.empty()) return nullptr;
  Json content = Json::array();
  for (const TokenLogprob& t : result.logprobs) {
    Json entry = token_json(t.token, t.logprob);
    entry["top_logprobs"] = Json::array();
    for (const auto& [token, logprob] : t.top) entry["top_logprobs"].push_back(token_json(token, logprob));
    content.push_back(entry);
  }
  return {{"content", content}, {"refusal", nullptr}};
}

}  // namespace

void schema_answer_as_content(CallResult& result) {
  result.calls.clear();
  result.stats.events.clear();
  // An answer cut off by max_tokens is content that ends early ("length"), as OpenAI sends it
  // (an object the library closed); any other failure stays an error.
  result.text_reply = result.error.empty() || result.stopped_at_max_tokens;
}

Json error_body(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
  return {{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? Json() : Json(param)},
                     {"code", code.empty() ? Json() : Json(code)}}}};
}

namespace {

// x_repeated_calls: "keep" (the model's calls stand, counted in x_repeated_calls) or "answer"
// (CallOptions::answer_instead_of_repeating), under tool_choice auto only; left out, the server's
// default where the request may answer in text (auto, no response_format), else keep.
bool parse_repeated_calls(const Json& body, const ChatRequest& request, bool answer_by_default) {
  const ToolChoice choice = request.options.tool_choice;
  if (!body.contains("x_repeated_calls") || body["x_repeated_calls"].is_null())
    return answer_by_default && choice == ToolChoice::Auto && !request.response_schema;
  const Json& value = body["x_repeated_calls"];
  if (value != "keep" && value != "answer")
    throw RequestError("'x_repeated_calls' must be \"keep\" or \"answer\"", "x_repeated_calls");
  if (value == "answer" && choice != ToolChoice::Auto)
    throw RequestError("'x_repeated_calls' \"answer\" needs tool_choice \"auto\" (the model may then answer in text)",
                       "x_repeated_calls");
  return value == "answer";
}

}  // namespace

ChatRequest parse_chat_request(const Json& body, const Limits& limits, const RequestDefaults& defaults) {
  if (!body.is_object()) throw RequestError("the request body must be a JSON object");
  ChatRequest request;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) throw RequestError("'model' must be a string", "model");
    request.model = body["model"].get<std::string>();
  }
  if (body.contains("n") && body["n"] != 1) throw RequestError("only n = 1 is supported", "n", "unsupported");
  refuse_what_cannot_be_honoured(body);
  request.messages = parse_messages(require(body, "messages", "body"), limits);
  request.tools = parse_tool_list(body, limits);
  parse_tool_choice(body, request);
  parse_response_format(body, limits, request);
  if (!optional_bool(body, "parallel_tool_calls", true)) request.options.max_calls = 1;
  request.stream = optional_bool(body, "stream", false);
  request.options.max_tokens = parse_max_tokens(body, limits);
  request.options.sampling = parse_sampling(body);
  request.options.stop = parse_stop(body);
  request.options.logprobs = parse_logprobs(body);
  request.options.template_kwargs = parse_template_kwargs(body);
  request.options.thinking_budget = parse_thinking_budget(body, request.options.max_tokens);
  request.options.answer_instead_of_repeating =
      parse_repeated_calls(body, request, defaults.answer_instead_of_repeating);
  if (body.contains("x_decoding_mode")) {
    if (!body["x_decoding_mode"].is_string()) throw RequestError("'x_decoding_mode' must be a string", "x_decoding_mode");
    try {
      // tool_choice says whether the answer may be text, not the mode.
      if (!apply_mode(body["x_decoding_mode"].get<std::string>(), request.options, {"auto"}).empty())
        throw Error("'auto' is not a decoding switch here: send tool_choice \"auto\"");
    } catch (const Error& e) {
      throw RequestError(e.what(), "x_decoding_mode");
    }
  }
  return request;
}

ChatRequest parse_chat_request(const std::string& body, const Limits& limits, const RequestDefaults& defaults) {
  if (!valid_utf8(body)) throw RequestError("the body is not valid UTF-8", "", "invalid_encoding");
  Json parsed = Json::parse(body, nullptr, false);
  if (parsed.is_discarded()) throw RequestError("the body is not valid JSON", "", "invalid_json");
  return parse_chat_request(parsed, limits, defaults);
}

ErrorResponse failed_answer(const CallResult& result) {
  if (result.error.empty() || result.text_reply) return {};
  const bool cut = result.stopped_at_max_tokens;
  return {422, error_body("the model did not make a valid call: " + result.error, "invalid_response_error", "",
                          cut ? "max_tokens_reached" : "invalid_tool_call")};
}

ErrorResponse timed_out() {
  return {504, error_body("the request ran past the server's time limit (--timeout)", "timeout", "", "timeout")};
}

std::string call_id(const std::string& completion_id, size_t index) {
  char hex[32];
  size_t hash = std::hash<std::string>{}(completion_id + "#" + std::to_string(index));
  std::snprintf(hex, sizeof hex, "%016zx%08zx", hash, index);
  return std::string("call_") + hex;
}

Json completion(const std::string& id, const std::string& model, long created, const CallResult& result) {
  Json message = {{"role", "assistant"}, {"content", nullptr}};
  if (!result.thinking_text.empty()) message["reasoning_content"] = result.reasoning;
  if (result.calls.empty()) {
    message["content"] = result.text;
  } else {
    Json calls = Json::array();
    for (size_t i = 0; i < result.calls.size(); ++i) calls.push_back(tool_call_json(call_id(id, i), result.calls[i]));
    message["tool_calls"] = calls;
  }
  return {{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", model},
          {"choices", Json::array({{{"index", 0}, {"message", message}, {"logprobs", logprobs_json(result)},
                                    {"finish_reason", finish_reason(result)}}})},
          {"usage", usage(result)}, {"x_timings", timings(result)}, {"x_repeated_calls", repeats(result)}};
}

Json role_chunk(const std::string& id, const std::string& model, long created) {
  return chunk(id, model, created, {{"role", "assistant"}, {"content", nullptr}});
}

Json call_chunk(const std::string& id, const std::string& model, long created, const CallEvent& event) {
  Json call = tool_call_json(call_id(id, size_t(event.index)), event.call);
  call["index"] = event.index;
  if (event.kind == CallEvent::Kind::Provisional) {
    Json out = chunk(id, model, created, Json::object());
    out["x_provisional_call"] = call;
    return out;
  }
  Json out = chunk(id, model, created, {{"tool_calls", Json::array({call})}});
  if (event.replaces_provisional) out["x_replaces_provisional"] = true;
  return out;
}

CallChunks::Told& CallChunks::told(int index) {
  if (size_t(index) >= calls_.size()) calls_.resize(size_t(index) + 1);
  return calls_[size_t(index)];
}

Json CallChunks::tool_calls(Json call) const { return chunk(id_, model_, created_, {{"tool_calls", Json::array({call})}}); }

Json CallChunks::delta(const CallDelta& delta) {
  Told& told = this->told(delta.index);
  if (told.finished) return nullptr;
  Json call = {{"index", delta.index}};
  if (!told.started) {
    call["id"] = call_id(id_, size_t(delta.index));
    call["type"] = "function";
    call["function"]["name"] = delta.name;
    told.started = true;
  }
  call["function"]["arguments"] = delta.arguments;
  told.arguments += delta.arguments;
  return tool_calls(std::move(call));
}

Json CallChunks::event(const CallEvent& event) {
  if (event.kind == CallEvent::Kind::Provisional) return call_chunk(id_, model_, created_, event);
  Told& told = this->told(event.index);
  told.finished = true;
  if (!told.started) return call_chunk(id_, model_, created_, event);
  const std::string arguments = dump_json(event.call.arguments);
  if (arguments.compare(0, told.arguments.size(), told.arguments) != 0)
    throw Error("the streamed arguments of call " + std::to_string(event.index) + " part from the call's");
  if (arguments.size() == told.arguments.size() && !event.replaces_provisional) return nullptr;
  Json out = tool_calls({{"index", event.index}, {"function", {{"arguments", arguments.substr(told.arguments.size())}}}});
  if (event.replaces_provisional) out["x_replaces_provisional"] = true;
  return out;
}

Json text_chunk(const std::string& id, const std::string& model, long created, const std::string& text) {
  return chunk(id, model, created, {{"content", text}});
}

Json reasoning_chunk(const std::string& id, const std::string& model, long created, const std::string& reasoning) {
  return chunk(id, model, created, {{"reasoning_content", reasoning}});
}

Json final_chunk(const std::string& id, const std::string& model, long created, const CallResult& result) {
  Json out = chunk(id, model, created, Json::object(), finish_reason(result));
  // The reply's tokens' log probabilities come with its end (a client's accumulator joins
  // the lists of every chunk).
  out["choices"][0]["logprobs"] = logprobs_json(result);
  out["usage"] = usage(result);
  out["x_timings"] = timings(result);
  out["x_repeated_calls"] = repeats(result);
  return out;
}

}  // namespace sw::openai
