// What the model tools read of a GGUF file before its weights: the tensor list (pack) and the
// shape of a llama-like model (shape). A damaged or crafted file is an Error saying what is
// wrong, never a crash or a read past the file (fuzz/fuzz_gguf.cpp feeds them any bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ggml.h>
#include <gguf.h>

#include "schemaweaver/error.h"

namespace sw {

struct GgufTensorInfo {
  std::string name;
  ggml_type type = GGML_TYPE_F32;
  int dims = 0;
  int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};
  uint64_t offset = 0;  // of its data in the file
  uint64_t bytes = 0;
};

// Every tensor's name, type, dimensions and place. Throws Error if the file is not a readable
// GGUF or a tensor's data does not lie within it.
std::vector<GgufTensorInfo> read_tensor_infos(const std::string& path);

// The settings shape needs, all positive and consistent (heads divide the width, KV heads the
// heads). Throws Error naming the key if one is missing, not one integer or out of range, and
// if the architecture is not llama or qwen2.
struct ModelShape {
  std::string arch;
  int layers = 0, ffn = 0, embedding = 0, heads = 0, kv_heads = 0, head_dim = 0;
};
ModelShape read_model_shape(const gguf_context* gguf, const std::string& path);

}  // namespace sw
