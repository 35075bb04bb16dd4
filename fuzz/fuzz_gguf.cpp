// GGUF files as the model tools read them before any weight: ggml's parser, the tensor list with
// each tensor's extent checked against the file (pack), a llama-like model's shape (shape). Any
// bytes give a result or sw::Error - never a crash, an abort or a read past the file.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "modeltools/gguf_metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // ggml reads GGUF from a path; a file of this process's own, in memory where /dev/shm is.
  static const std::string path = "/dev/shm/fuzz_gguf-" + std::to_string(::getpid()) + ".gguf";
  FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  try {
    sw::read_tensor_infos(path);
  } catch (const sw::Error&) {
  }
  ggml_context* meta = nullptr;
  if (gguf_context* gguf = gguf_init_from_file(path.c_str(), gguf_init_params{true, &meta})) {
    try {
      sw::read_model_shape(gguf, path);
    } catch (const sw::Error&) {
    }
    gguf_free(gguf);
    ggml_free(meta);
  }
  return 0;
}
