/* The C API used from C: call_from_c.c. */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loads the model, compiles the tools, makes one call (64 tokens at most) and writes into `out`
 * the count of final call events, a space and the result's JSON - or the session's error.
 * Returns the call's status. */
int call_from_c(const char* model_path, const char* tools_json, const char* messages_json, char* out, size_t size);

#ifdef __cplusplus
}
#endif
