/* The C API used from C (a C compiler, C's headers): the whole way from a model file to a call,
 * as an app written in C takes it. The C++ test (test_c_api.cpp) checks what it returns. */
#include "call_from_c.h"

#include <stdio.h>
#include <string.h>

#include "schemaweaver/schemaweaver.h"

static void count_final(schemaweaver_event_kind kind, int32_t index, const char* call_json, bool replaces, void* data) {
  (void)index; (void)call_json; (void)replaces;
  if (kind == SCHEMAWEAVER_EVENT_FINAL) ++*(int*)data;
}

int call_from_c(const char* model_path, const char* tools_json, const char* messages_json, char* out, size_t size) {
  int finals = 0;
  schemaweaver_model* model = schemaweaver_model_load(model_path, schemaweaver_model_default_params());
  schemaweaver_tools* tools = schemaweaver_tools_compile(model, tools_json);
  schemaweaver_session* session = schemaweaver_session_new(model);
  schemaweaver_call_params params = schemaweaver_call_default_params();
  char* result = NULL;
  params.max_tokens = 64;
  params.on_call = count_final;
  params.user_data = &finals;
  int status = schemaweaver_session_call(session, messages_json, tools, &params, &result);
  if (status == SCHEMAWEAVER_OK) snprintf(out, size, "%d %s", finals, result);
  else snprintf(out, size, "%s", schemaweaver_session_error(session));
  schemaweaver_free(result);
  schemaweaver_session_free(session);
  schemaweaver_tools_free(tools);
  schemaweaver_model_free(model);
  return status;
}
