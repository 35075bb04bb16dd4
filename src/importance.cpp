#include "importance.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <ggml-backend.h>

namespace sw {
namespace {

bool ends_with(const char* text, const char* end) {
  size_t n = std::strlen(text), m = std::strlen(end);
  return n >= m && std::strcmp(text + n - m, end) == 0;
}

struct Gatherer {
  struct Sums {
    std::vector<double> square;  // per input channel
    int64_t rows = 0;
  };
  std::map<std::string, Sums> sums;
  std::vector<float> scratch;

  // A product of a stored weight matrix (src 0) with float activations (src 1).
  static bool observed(const ggml_tensor* t) {
    if (t->op != GGML_OP_MUL_MAT) return false;
    const ggml_tensor* weight = t->src[0];
    const ggml_tensor* input = t->src[1];
    return weight && input && ends_with(weight->name, ".weight") && input->type == GGML_TYPE_F32 &&
           ggml_is_contiguous(input);
  }

  void add(const ggml_tensor* t) {
    const ggml_tensor* input = t->src[1];
    const int64_t width = input->ne[0];
    const int64_t rows = ggml_nrows(input);
    scratch.resize(size_t(width * rows));
    ggml_backend_tensor_get(input, scratch.data(), 0, ggml_nbytes(input));
    Sums& s = sums[t->src[0]->name];
    if (s.square.empty()) s.square.assign(size_t(width), 0.0);
    if (int64_t(s.square.size()) != width) return;  // a matrix used with two widths: keep the first
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = scratch.data() + r * width;
      for (int64_t j = 0; j < width; ++j) s.square[size_t(j)] += double(x[j]) * double(x[j]);
    }
    s.rows += rows;
  }

  static bool callback(ggml_tensor* t, bool ask, void* self) {
    if (ask) return observed(t);
    if (observed(t)) static_cast<Gatherer*>(self)->add(t);
    return true;
  }
};

}  // namespace

Calibration measure_importance(const Model::Impl& model, const std::string& text, int max_tokens, int window) {
  std::vector<llama_token> tokens = model.tokenize(text, false);
  if (tokens.empty()) throw Error("the calibration text holds no tokens");
  if (int(tokens.size()) > max_tokens) tokens.resize(size_t(max_tokens));
  Gatherer gatherer;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(window + 1);
  cp.n_batch = cp.n_ubatch = uint32_t(window + 1);
  cp.n_threads = cp.n_threads_batch = model.threads;
  cp.cb_eval = &Gatherer::callback;
  cp.cb_eval_user_data = &gatherer;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model.model, cp);
  if (!ctx) throw Error("failed to create a llama.cpp context: " + llama_last_errors());
  const llama_token bos = llama_vocab_bos(model.vocab);
  llama_batch batch = llama_batch_init(window + 1, 0, 1);
  for (size_t start = 0; start < tokens.size(); start += size_t(window)) {
    // Each window reads from an empty cache, behind the BOS token where the model has one.
    llama_memory_clear(llama_get_memory(ctx), true);
    batch.n_tokens = 0;
    auto push = [&](llama_token token) {
      int i = batch.n_tokens++;
      batch.token[i] = token;
      batch.pos[i] = i;
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = false;
    };
    if (bos != LLAMA_TOKEN_NULL) push(bos);
    size_t end = std::min(tokens.size(), start + size_t(window));
    for (size_t i = start; i < end; ++i) push(tokens[i]);
    batch.logits[batch.n_tokens - 1] = true;
    int rc = llama_decode(ctx, batch);
    if (rc != 0) {
      llama_batch_free(batch);
      llama_free(ctx);
      throw Error("llama_decode failed on the calibration text (code " + std::to_string(rc) + ")");
    }
  }
  llama_batch_free(batch);
  llama_free(ctx);
  Calibration calibration{{}, int(tokens.size())};
  for (const auto& [name, s] : gatherer.sums) {
    ChannelImportance& c = calibration.importance[name];
    c.rows = s.rows;
    for (double v : s.square) c.mean_square.push_back(float(v / double(std::max<int64_t>(s.rows, 1))));
  }
  return calibration;
}

}  // namespace sw
