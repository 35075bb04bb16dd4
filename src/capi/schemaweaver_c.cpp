// The C API (schemaweaver/schemaweaver.h) over the C++ one: handles that hold the C++ objects
// and the message of what failed; every entry point catches what the C++ API throws, once, in
// `guarded`, and turns it into a status.
#include "schemaweaver/schemaweaver.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "schemaweaver/engine.h"
#include "schemaweaver/openai.h"

struct schemaweaver_model {
  std::shared_ptr<const sw::Model> model;
  std::string error;
};

struct schemaweaver_tools {
  std::shared_ptr<const sw::ToolSet> tools;
  std::string error;
};

struct schemaweaver_session {
  std::unique_ptr<sw::Session> session;
  std::string error;
};

namespace {

// Runs `body`; what it throws becomes a status and its message goes to `error`.
template <class Body>
schemaweaver_status guarded(std::string& error, Body&& body) {
  error.clear();
  try {
    body();
    return SCHEMAWEAVER_OK;
  } catch (const sw::Cancelled& e) {
    error = e.what();
    return SCHEMAWEAVER_CANCELLED;
  } catch (const sw::Error& e) {
    error = e.what();
    return SCHEMAWEAVER_BAD_INPUT;
  } catch (const std::exception& e) {
    error = std::string("internal error: ") + e.what();
    return SCHEMAWEAVER_INTERNAL_ERROR;
  } catch (...) {
    error = "internal error";
    return SCHEMAWEAVER_INTERNAL_ERROR;
  }
}

// A copy the caller frees with schemaweaver_free (malloc'd, as C code expects of a char*).
char* owned_copy(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy) std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

sw::Json parse_json(const char* text, const char* what) {
  if (!text) throw sw::Error(std::string(what) + " is NULL");
  try {
    return sw::Json::parse(text);
  } catch (const sw::Json::parse_error& e) {
    throw sw::Error(std::string(what) + " is not valid JSON: " + e.what());
  }
}

const char* error_or_null(const std::string& error) { return error.empty() ? nullptr : error.c_str(); }

// A handle made by `make`, which may throw: a handle whose making failed keeps why.
template <class Handle, class Make>
Handle* made(Make&& make) {
  Handle* handle = new (std::nothrow) Handle();
  if (handle) guarded(handle->error, [&] { make(*handle); });
  return handle;
}

// What is made from a model needs one that loaded.
void require_loaded(const schemaweaver_model* model) {
  if (!model) throw sw::Error("the model is NULL");
  if (!model->model) throw sw::Error("the model failed to load: " + model->error);
}

sw::CallOptions call_options(const schemaweaver_call_params& params) {
  sw::CallOptions options;
  sw::apply_mode(params.mode ? params.mode : "schemaweaver", options);
  if (params.tool_choice) options.tool_choice = sw::parse_tool_choice(params.tool_choice);
  if (params.max_tokens < 1) throw sw::Error("max_tokens must be at least 1");
  if (params.max_calls < 0 || params.thinking_budget < 0)
    throw sw::Error("max_calls and thinking_budget must not be negative");
  options.max_tokens = params.max_tokens;
  options.max_calls = params.max_calls;
  options.thinking_budget = params.thinking_budget;
  if (!(params.temperature >= 0) || params.top_k < 0 || !(params.top_p > 0 && params.top_p <= 1) ||
      !(params.min_p >= 0 && params.min_p <= 1))
    throw sw::Error("sampling: temperature must be at least 0, top_k at least 0, top_p in (0, 1], min_p in [0, 1]");
  options.sampling.temperature = params.temperature;
  options.sampling.top_k = params.top_k;
  options.sampling.top_p = params.top_p;
  options.sampling.min_p = params.min_p;
  if (params.seeded) options.sampling.seed = params.seed;
  options.answer_instead_of_repeating = params.answer_instead_of_repeating;
  if (params.answer_schema) {
    if (!params.answer_schema->tools) throw sw::Error("the answer schema failed to compile: " + params.answer_schema->error);
    options.answer_schema = params.answer_schema->tools;
  }
  if (params.on_call) {
    options.on_call = [&params](const sw::CallEvent& event) {
      const std::string call = event.call.to_json().dump();
      params.on_call(event.kind == sw::CallEvent::Kind::Provisional ? SCHEMAWEAVER_EVENT_PROVISIONAL
                                                                     : SCHEMAWEAVER_EVENT_FINAL,
                     event.index, call.c_str(), event.replaces_provisional, params.user_data);
    };
  }
  if (params.cancel) options.cancelled = [&params] { return params.cancel(params.user_data); };
  return options;
}

}  // namespace

extern "C" {

const char* schemaweaver_version(void) {
  static const std::string version = sw::version().schemaweaver;
  return version.c_str();
}

const char* schemaweaver_llama_version(void) {
  static const std::string version = sw::version().llama_cpp;
  return version.c_str();
}

void schemaweaver_free(char* text) { std::free(text); }

static_assert(int(sw::LogLevel::Debug) == SCHEMAWEAVER_LOG_DEBUG && int(sw::LogLevel::Info) == SCHEMAWEAVER_LOG_INFO &&
                  int(sw::LogLevel::Warn) == SCHEMAWEAVER_LOG_WARN && int(sw::LogLevel::Error) == SCHEMAWEAVER_LOG_ERROR,
              "the C API's log levels are the C++ API's");

void schemaweaver_set_log(schemaweaver_log_callback callback, void* user_data) {
  if (!callback) {
    sw::set_log_callback({});
    return;
  }
  sw::set_log_callback([callback, user_data](sw::LogLevel level, const std::string& text) {
    callback(static_cast<schemaweaver_log_level>(level), text.c_str(), user_data);
  });
}

schemaweaver_model_params schemaweaver_model_default_params(void) {
  const sw::ModelParams defaults;
  return {defaults.context_size, defaults.threads, nullptr, nullptr, defaults.mmap};
}

schemaweaver_model* schemaweaver_model_load(const char* path, schemaweaver_model_params params) {
  return made<schemaweaver_model>([&](schemaweaver_model& handle) {
    if (!path) throw sw::Error("the model path is NULL");
    if (params.context_size < 0 || params.threads < 0) throw sw::Error("context_size and threads must not be negative");
    sw::ModelParams loaded;
    loaded.path = path;
    loaded.context_size = params.context_size;
    loaded.threads = params.threads;
    loaded.call_format = params.call_format ? params.call_format : "";
    loaded.measurements_dir = params.measurements_dir ? params.measurements_dir : "";
    loaded.mmap = params.mmap;
    handle.model = sw::Model::load(loaded);
  });
}

const char* schemaweaver_model_error(const schemaweaver_model* model) {
  return model ? error_or_null(model->error) : "the model is NULL";
}

char* schemaweaver_model_info(const schemaweaver_model* model) {
  if (!model || !model->model) return nullptr;
  const sw::ModelInfo info = model->model->info();
  const sw::Json json = {{"path", info.path}, {"name", info.name}, {"description", info.description},
                         {"weight_bytes", info.weight_bytes}, {"parameters", info.parameters},
                         {"vocab_size", info.vocab_size}, {"context_size", info.context_size},
                         {"threads", info.threads}, {"call_format", info.call_format},
                         {"call_format_fallback", info.call_format_fallback},
                         {"thinking_block", info.thinking_block}, {"llama_version", info.llama_version},
                         {"system_info", info.system_info}, {"load_ms", info.load_ms}};
  return owned_copy(json.dump());
}

void schemaweaver_model_free(schemaweaver_model* model) { delete model; }

schemaweaver_tools* schemaweaver_tools_compile(const schemaweaver_model* model, const char* tools_json) {
  return made<schemaweaver_tools>([&](schemaweaver_tools& handle) {
    require_loaded(model);
    handle.tools = sw::compile_tools(model->model, sw::parse_tools(parse_json(tools_json, "the tools")));
  });
}

schemaweaver_tools* schemaweaver_schema_compile(const schemaweaver_model* model, const char* schema_json) {
  return made<schemaweaver_tools>([&](schemaweaver_tools& handle) {
    require_loaded(model);
    handle.tools = sw::compile_schema(model->model,
                                      sw::parse_response_schema_document(parse_json(schema_json, "the schema")));
  });
}

const char* schemaweaver_tools_error(const schemaweaver_tools* tools) {
  return tools ? error_or_null(tools->error) : "the tool set is NULL";
}

void schemaweaver_tools_free(schemaweaver_tools* tools) { delete tools; }

schemaweaver_session* schemaweaver_session_new(const schemaweaver_model* model) {
  return made<schemaweaver_session>([&](schemaweaver_session& handle) {
    require_loaded(model);
    handle.session = std::make_unique<sw::Session>(model->model);
  });
}

const char* schemaweaver_session_error(const schemaweaver_session* session) {
  return session ? error_or_null(session->error) : "the session is NULL";
}

void schemaweaver_session_free(schemaweaver_session* session) { delete session; }

schemaweaver_call_params schemaweaver_call_default_params(void) {
  const sw::CallOptions defaults;
  schemaweaver_call_params params{};
  params.mode = "schemaweaver";
  params.max_tokens = defaults.max_tokens;
  params.max_calls = defaults.max_calls;
  params.temperature = defaults.sampling.temperature;
  params.top_k = defaults.sampling.top_k;
  params.top_p = defaults.sampling.top_p;
  params.min_p = defaults.sampling.min_p;
  return params;
}

schemaweaver_status schemaweaver_session_call(schemaweaver_session* session, const char* messages_json,
                                              const schemaweaver_tools* tools,
                                              const schemaweaver_call_params* params, char** result_json) {
  if (result_json) *result_json = nullptr;
  if (!session || !result_json) return SCHEMAWEAVER_INVALID_ARGUMENT;
  if (!session->session) return SCHEMAWEAVER_INVALID_ARGUMENT;  // its error says why it was not made
  if (!tools || !tools->tools) {
    session->error = tools ? "the tool set failed to compile: " + tools->error : "the tool set is NULL";
    return SCHEMAWEAVER_INVALID_ARGUMENT;
  }
  const schemaweaver_call_params defaults = schemaweaver_call_default_params();
  const schemaweaver_call_params& chosen = params ? *params : defaults;
  return guarded(session->error, [&] {
    const std::vector<sw::Message> messages = sw::openai::parse_messages(parse_json(messages_json, "the messages"));
    const sw::CallResult result = session->session->call(messages, *tools->tools, call_options(chosen));
    char* text = owned_copy(result.to_json().dump(-1, ' ', false, sw::Json::error_handler_t::replace));
    if (!text) throw std::bad_alloc();
    *result_json = text;
  });
}

}  // extern "C"
