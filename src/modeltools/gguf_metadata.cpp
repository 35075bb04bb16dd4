#include "modeltools/gguf_metadata.h"

#include <filesystem>
#include <limits>

namespace sw {
namespace {

// An integer setting of the architecture ("<arch>.block_count"); a per-layer list is refused.
// ggml aborts on a key read as another type than it has, so the type is asked first.
int64_t setting(const gguf_context* gguf, const std::string& path, const std::string& key, int64_t fallback) {
  const int64_t id = gguf_find_key(gguf, key.c_str());
  if (id < 0) {
    if (fallback >= 0) return fallback;
    throw Error("'" + path + "' has no '" + key + "'");
  }
  switch (gguf_get_kv_type(gguf, id)) {
    case GGUF_TYPE_UINT32: return gguf_get_val_u32(gguf, id);
    case GGUF_TYPE_INT32: return gguf_get_val_i32(gguf, id);
    case GGUF_TYPE_UINT64: {
      const uint64_t value = gguf_get_val_u64(gguf, id);
      return value > uint64_t(std::numeric_limits<int64_t>::max()) ? -1 : int64_t(value);
    }
    case GGUF_TYPE_INT64: return gguf_get_val_i64(gguf, id);
    default: throw Error("'" + path + "': '" + key + "' is not one integer (a model already shaped per layer?)");
  }
}

// A setting between 1 and `most`.
int positive_setting(const gguf_context* gguf, const std::string& path, const std::string& key, int64_t most,
                     int64_t fallback = -1) {
  const int64_t value = setting(gguf, path, key, fallback);
  if (value < 1 || value > most)
    throw Error("'" + path + "': '" + key + "' is " + std::to_string(value) + ", not between 1 and " +
                std::to_string(most));
  return int(value);
}

}  // namespace

std::vector<GgufTensorInfo> read_tensor_infos(const std::string& path) {
  ggml_context* meta = nullptr;
  gguf_context* gguf = gguf_init_from_file(path.c_str(), gguf_init_params{true, &meta});
  if (!gguf) throw Error("cannot read '" + path + "' as a GGUF file");
  std::error_code error;
  const uint64_t file_size = std::filesystem::file_size(path, error);
  const uint64_t data = gguf_get_data_offset(gguf);
  std::vector<GgufTensorInfo> infos;
  std::string problem;
  for (int64_t i = 0; i < gguf_get_n_tensors(gguf) && problem.empty(); ++i) {
    GgufTensorInfo info;
    info.name = gguf_get_tensor_name(gguf, i);
    info.bytes = gguf_get_tensor_size(gguf, i);
    info.offset = data + gguf_get_tensor_offset(gguf, i);
    const ggml_tensor* t = ggml_get_tensor(meta, info.name.c_str());
    if (t) {
      info.type = t->type;
      info.dims = ggml_n_dims(t);
      for (int d = 0; d < GGML_MAX_DIMS; ++d) info.ne[d] = t->ne[d];
    }
    if (info.offset < data || info.offset > file_size || info.bytes > file_size - info.offset)
      problem = "the data of tensor '" + info.name + "' does not lie within the file (truncated?)";
    infos.push_back(std::move(info));
  }
  gguf_free(gguf);
  ggml_free(meta);
  if (!problem.empty()) throw Error("'" + path + "': " + problem);
  return infos;
}

ModelShape read_model_shape(const gguf_context* gguf, const std::string& path) {
  ModelShape s;
  const int64_t id = gguf_find_key(gguf, "general.architecture");
  s.arch = id >= 0 && gguf_get_kv_type(gguf, id) == GGUF_TYPE_STRING ? gguf_get_val_str(gguf, id) : "";
  if (s.arch != "llama" && s.arch != "qwen2")
    throw Error("'" + path + "' is a '" + s.arch +
                "' model; only llama and qwen2 models can be shaped "
                "(their blocks map onto llama.cpp's per-layer 'deci' architecture)");
  const std::string prefix = s.arch + ".";
  constexpr int64_t kMostLayers = 4096, kMostWidth = 1 << 20;
  s.layers = positive_setting(gguf, path, prefix + "block_count", kMostLayers);
  s.ffn = positive_setting(gguf, path, prefix + "feed_forward_length", kMostWidth);
  s.embedding = positive_setting(gguf, path, prefix + "embedding_length", kMostWidth);
  s.heads = positive_setting(gguf, path, prefix + "attention.head_count", s.embedding);
  s.kv_heads = positive_setting(gguf, path, prefix + "attention.head_count_kv", s.heads, s.heads);
  s.head_dim = positive_setting(gguf, path, prefix + "attention.key_length", kMostWidth, s.embedding / s.heads);
  if (s.embedding % s.heads != 0 || s.heads % s.kv_heads != 0)
    throw Error("'" + path + "': " + std::to_string(s.heads) + " heads with " + std::to_string(s.kv_heads) +
                " KV heads do not divide a width of " + std::to_string(s.embedding));
  return s;
}

}  // namespace sw
