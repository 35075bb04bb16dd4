#include "modeltools/importance.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <ggml-backend.h>

#include "modeltools/text_reader.h"

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

Calibration measure_importance(const LoadedModel& model, const std::string& text, int max_tokens,
                               const ProgressCallback& progress, int window) {
  std::vector<llama_token> tokens = model.tokenize(text, false);
  if (tokens.empty()) throw Error("the calibration text holds no tokens");
  if (int(tokens.size()) > max_tokens) tokens.resize(size_t(max_tokens));
  Gatherer gatherer;
  WindowReader reader(model, window, &Gatherer::callback, &gatherer);
  const std::vector<std::vector<llama_token>> parts = WindowReader::split(tokens, window);
  for (size_t i = 0; i < parts.size(); ++i) {
    reader.read(parts[i], false);
    report(progress, "calibration", i + 1, parts.size());
  }
  Calibration calibration{{}, int(tokens.size())};
  for (const auto& [name, s] : gatherer.sums) {
    ChannelImportance& c = calibration.importance[name];
    c.rows = s.rows;
    for (double v : s.square) c.mean_square.push_back(float(v / double(std::max<int64_t>(s.rows, 1))));
  }
  return calibration;
}

}  // namespace sw
