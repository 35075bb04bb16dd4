/* One tool call with the C API: load a model, compile the tools, ask, print the result.
 *   weather MODEL.gguf TOOLS.json "What is the weather like in Paris?" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <schemaweaver/schemaweaver.h>

static char* read_file(const char* path) {
  FILE* file = fopen(path, "rb");
  if (!file) return NULL;
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  rewind(file);
  char* text = calloc((size_t)size + 1, 1);
  if (text && fread(text, 1, (size_t)size, file) != (size_t)size) text[0] = '\0';
  fclose(file);
  return text;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.gguf TOOLS.json REQUEST\n", argv[0]);
    return 2;
  }
  char* tools_json = read_file(argv[2]);
  char messages[1024];
  /* A real app escapes the request for JSON; this one takes it as it is. */
  snprintf(messages, sizeof messages, "[{\"role\": \"user\", \"content\": \"%s\"}]", argv[3]);

  schemaweaver_model* model = schemaweaver_model_load(argv[1], schemaweaver_model_default_params());
  schemaweaver_tools* tools = schemaweaver_tools_compile(model, tools_json ? tools_json : "");
  schemaweaver_session* session = schemaweaver_session_new(model);
  char* result = NULL;
  int status = schemaweaver_session_call(session, messages, tools, NULL, &result);
  if (status == SCHEMAWEAVER_OK) printf("%s\n", result);
  else fprintf(stderr, "error: %s\n", schemaweaver_model_error(model)   ? schemaweaver_model_error(model)
                                      : schemaweaver_tools_error(tools) ? schemaweaver_tools_error(tools)
                                                                        : schemaweaver_session_error(session));
  schemaweaver_free(result);
  schemaweaver_session_free(session);
  schemaweaver_tools_free(tools);
  schemaweaver_model_free(model);
  free(tools_json);
  return status == SCHEMAWEAVER_OK ? 0 : 1;
}
