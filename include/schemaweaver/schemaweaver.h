/* schemaweaver/schemaweaver.h - the C API: tool calls from a small language model, for apps in
 * any language that can call C (JNI on Android, Swift on iOS, Python's ctypes, ...).
 *
 *   schemaweaver_model* model = schemaweaver_model_load("model.gguf", schemaweaver_model_default_params());
 *   if (schemaweaver_model_error(model)) { puts(schemaweaver_model_error(model)); ... }
 *   schemaweaver_tools* tools = schemaweaver_tools_compile(model, tools_json);   // also check its error
 *   schemaweaver_session* session = schemaweaver_session_new(model);
 *   char* result = NULL;
 *   schemaweaver_call_params params = schemaweaver_call_default_params();
 *   if (schemaweaver_session_call(session, "[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}]",
 *                                 tools, &params, &result) == SCHEMAWEAVER_OK)
 *     puts(result);                            // {"calls": [{"name": ..., "arguments": {...}}], ...}
 *   else
 *     puts(schemaweaver_session_error(session));
 *   schemaweaver_free(result);
 *   schemaweaver_session_free(session); schemaweaver_tools_free(tools); schemaweaver_model_free(model);
 *
 * A thin layer over the C++ API (schemaweaver/engine.h), in the manner of llama.h and llguidance.h:
 * - Handles are opaque. A model and a compiled tool set are immutable once made and may be shared
 *   by sessions on several threads; a session is one stream of calls (one KV cache) and must be
 *   used by one thread at a time. A model stays loaded while a tool set or session made from it
 *   lives, so the handles may be freed in any order.
 * - Tools, messages, schemas and results are UTF-8 JSON text. Strings the library returns for the
 *   caller to keep are freed with schemaweaver_free; strings a handle owns (its error) live as
 *   long as the handle, or until its next call.
 * - Errors: a function that makes a handle always returns one (NULL only when memory runs out);
 *   if making it failed, schemaweaver_*_error says why, and the handle serves only to be freed.
 *   A call returns a status code and keeps the message on its session. The library never throws
 *   across this API, never aborts on bad input and never prints (the log: schemaweaver_set_log).
 * - A model's answer that is not a valid call is not an error of the API: the result's "error"
 *   field says why (as CallResult::error does).
 */
#ifndef SCHEMAWEAVER_H
#define SCHEMAWEAVER_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum schemaweaver_status {
  SCHEMAWEAVER_OK = 0,
  SCHEMAWEAVER_INVALID_ARGUMENT = 1, /* a NULL handle or argument, or a handle whose making failed */
  SCHEMAWEAVER_BAD_INPUT = 2,        /* the library refused what it was given (bad JSON, a refused
                                        schema, an unknown mode, a prompt longer than the context) */
  SCHEMAWEAVER_CANCELLED = 3,        /* the cancel callback asked to stop */
  SCHEMAWEAVER_INTERNAL_ERROR = 4,   /* anything else (out of memory, a bug): the message says what */
} schemaweaver_status;

typedef struct schemaweaver_model schemaweaver_model;
typedef struct schemaweaver_tools schemaweaver_tools;
typedef struct schemaweaver_session schemaweaver_session;

/* This library's version ("MAJOR.MINOR.PATCH") and the llama.cpp build it was compiled against
 * ("llama.cpp@COMMIT"). Static strings. Thread-safe. */
const char* schemaweaver_version(void);
const char* schemaweaver_llama_version(void);

/* Frees a string the library returned (a result, a model's info); NULL is ignored. Thread-safe. */
void schemaweaver_free(char* text);

/* llama.cpp's log (the library itself prints nothing): levels as below; text in pieces as llama.cpp
 * writes them. With no callback set (the default, or NULL) the log is dropped. Process-wide;
 * thread-safe; the callback is called from the thread that loads or decodes, one call at a time,
 * and must not call schemaweaver_set_log. */
typedef enum schemaweaver_log_level {
  SCHEMAWEAVER_LOG_DEBUG = 0,
  SCHEMAWEAVER_LOG_INFO = 1,
  SCHEMAWEAVER_LOG_WARN = 2,
  SCHEMAWEAVER_LOG_ERROR = 3,
} schemaweaver_log_level;
typedef void (*schemaweaver_log_callback)(schemaweaver_log_level level, const char* text, void* user_data);
void schemaweaver_set_log(schemaweaver_log_callback callback, void* user_data);

/* ---- models ---- */

typedef struct schemaweaver_model_params {
  int32_t context_size;          /* tokens of KV cache per session (default 4096) */
  int32_t threads;               /* 0: all cores */
  const char* call_format;       /* NULL: the model's chat template says; else "smollm2", "hermes", ... */
  const char* measurements_dir;  /* where pass costs are kept between runs; NULL: none kept */
  bool mmap;                     /* map the weights (default) or copy them into memory */
} schemaweaver_model_params;
schemaweaver_model_params schemaweaver_model_default_params(void);  /* thread-safe */

/* Loads a GGUF model. Check schemaweaver_model_error. Thread-safe. */
schemaweaver_model* schemaweaver_model_load(const char* path, schemaweaver_model_params params);
/* NULL if the model loaded, else why not. Thread-safe. */
const char* schemaweaver_model_error(const schemaweaver_model* model);
/* The model's description as JSON (name, architecture, size, call format, llama.cpp version...);
 * free with schemaweaver_free. NULL for a NULL or failed model. Thread-safe. */
char* schemaweaver_model_info(const schemaweaver_model* model);
/* Frees the handle (the model itself once no tool set or session of it is left); NULL is ignored.
 * Not while another thread uses this handle. */
void schemaweaver_model_free(schemaweaver_model* model);

/* ---- tool sets ---- */

/* Compiles tools (a JSON list in OpenAI's, MCP's or BFCL's shape) for the model: grammars,
 * skeletons, token sequences. Check schemaweaver_tools_error (a bad JSON text, a schema keyword
 * the engine cannot enforce, two tools of one name). Thread-safe. */
schemaweaver_tools* schemaweaver_tools_compile(const schemaweaver_model* model, const char* tools_json);
/* Compiles a response schema (a JSON Schema of an object, or OpenAI's {"name", "schema"} around
 * one) for answers that are one object of it: a structured output. A call with it answers with the
 * object in its result's "text" (and one call of the schema's name). Thread-safe. */
schemaweaver_tools* schemaweaver_schema_compile(const schemaweaver_model* model, const char* schema_json);
/* NULL if the tool set compiled, else why not. Thread-safe. */
const char* schemaweaver_tools_error(const schemaweaver_tools* tools);
/* NULL is ignored. Not while another thread uses this handle. */
void schemaweaver_tools_free(schemaweaver_tools* tools);

/* ---- sessions and calls ---- */

/* A session on the model: one KV cache, which keeps the prompt's beginning for the next call.
 * Check schemaweaver_session_error (a failed model). Thread-safe; the session itself is not. */
schemaweaver_session* schemaweaver_session_new(const schemaweaver_model* model);
/* The message of the session's last failed call (or of its making); NULL if it succeeded.
 * Valid until the session's next call. On the thread that uses the session. */
const char* schemaweaver_session_error(const schemaweaver_session* session);
/* NULL is ignored. Not while a call of it runs. */
void schemaweaver_session_free(schemaweaver_session* session);

typedef enum schemaweaver_event_kind {
  SCHEMAWEAVER_EVENT_PROVISIONAL = 0, /* a read-only tool's call with its required arguments only */
  SCHEMAWEAVER_EVENT_FINAL = 1,       /* the call as it stands in the answer */
} schemaweaver_event_kind;
/* A call as soon as it can be executed: call_json is {"name", "arguments"}, valid during the
 * callback only. `index` is the call's place in the turn; a final event with `replaces_provisional`
 * set means the provisional call of that index differed and its result must be discarded. Called
 * on the thread that makes the call. */
typedef void (*schemaweaver_call_callback)(schemaweaver_event_kind kind, int32_t index, const char* call_json,
                                           bool replaces_provisional, void* user_data);
/* Polled before every forward pass: true stops the call with SCHEMAWEAVER_CANCELLED. */
typedef bool (*schemaweaver_cancel_callback)(void* user_data);

typedef struct schemaweaver_call_params {
  const char* mode;        /* "schemaweaver" (default), "jump-forward", "constrained", "speculative", "free",
                              with switches as the CLI's --mode spells them ("schemaweaver/no-padding") */
  const char* tool_choice; /* "required", "auto" or "none"; NULL (default): as the mode says (its switch
                              "auto", else required) */
  int32_t max_tokens;      /* tokens the model chooses at most (default 256) */
  int32_t max_calls;       /* calls in the turn at most; 0: any number */
  int32_t thinking_budget; /* a reasoning template's thinking: 0 off (default), N > 0 up to N tokens */
  float temperature;       /* 0 (default): greedy; above: drawn, with the four below */
  int32_t top_k;
  float top_p;
  float min_p;
  uint64_t seed;           /* used when `seeded` */
  bool seeded;
  /* With tool_choice "auto": where the model does not call, its answer is one object of this
     schema (schemaweaver_schema_compile) instead of text - the result's "schema_answer" is then
     true, its "text" the object. NULL (default): a reply is text. */
  const schemaweaver_tools* answer_schema;
  schemaweaver_call_callback on_call;  /* NULL: none */
  schemaweaver_cancel_callback cancel; /* NULL: none */
  void* user_data;                     /* handed to both callbacks */
  /* With tool_choice "auto": where every call of the answer repeats one the conversation already
     made and got a result for, answer in text instead (the result's "answered_instead_of_repeating";
     "stats"."repeated_calls" counts such calls either way). false (default): the calls stand. */
  bool answer_instead_of_repeating;
} schemaweaver_call_params;
schemaweaver_call_params schemaweaver_call_default_params(void);  /* thread-safe */

/* Makes one call: renders the messages (a JSON list of OpenAI chat messages) with the model's
 * chat template and the tools, and decodes the answer. On SCHEMAWEAVER_OK, *result_json is the
 * result (free with schemaweaver_free): {"calls": [{"name", "arguments"}], "text", "error",
 * "text_reply", "schema_answer", "reasoning", "stopped_at_max_tokens", "stats": {...}, "events": [...]}. Otherwise
 * *result_json is NULL and schemaweaver_session_error says why. `params` NULL: the defaults.
 * One call at a time per session (the tool set and model may serve other sessions meanwhile). */
schemaweaver_status schemaweaver_session_call(schemaweaver_session* session, const char* messages_json,
                                              const schemaweaver_tools* tools,
                                              const schemaweaver_call_params* params, char** result_json);

#ifdef __cplusplus
}
#endif

#endif /* SCHEMAWEAVER_H */
