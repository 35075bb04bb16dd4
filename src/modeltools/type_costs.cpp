#include "modeltools/type_costs.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <thread>
#include <tuple>

#include "engine/model/model.h"
#include "util/measurement_cache.h"

namespace sw {
namespace {

using Clock = std::chrono::steady_clock;

int resolved_threads(int threads) {
  return threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
}

// The largest cache of cpu0 in bytes (sysfs writes "260M" or "4096K"); 32 MiB if unknown.
size_t last_level_cache_bytes() {
  size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    size_t value = 0;
    char unit = 0;
    if (!(in >> value)) continue;
    in >> unit;
    largest = std::max(largest, value * (unit == 'M' ? size_t(1) << 20 : unit == 'K' ? size_t(1) << 10 : 1));
  }
  return largest ? largest : size_t(32) << 20;
}

struct ContextDeleter {
  void operator()(ggml_context* context) const { ggml_free(context); }
};
using ContextPtr = std::unique_ptr<ggml_context, ContextDeleter>;
struct BufferDeleter {
  void operator()(ggml_backend_buffer* buffer) const { ggml_backend_buffer_free(buffer); }
};
using BufferPtr = std::unique_ptr<ggml_backend_buffer, BufferDeleter>;

ContextPtr tensor_context(size_t tensors, size_t graph_nodes = 0) {
  ggml_init_params params{tensors * ggml_tensor_overhead() +
                              (graph_nodes ? ggml_graph_overhead_custom(graph_nodes, false) : 0),
                          nullptr, true};
  ContextPtr context(ggml_init(params));
  if (!context) throw Error("ggml could not make a context to time the multiplications");
  return context;
}

// llama.cpp's CPU backend with `threads` threads and its extra (repacked) buffer types.
class CpuBackend {
 public:
  explicit CpuBackend(int threads) {
    init_llama_backend();
    device_ = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!device_) throw Error("llama.cpp has no CPU backend to time the multiplications on");
    backend_ = ggml_backend_dev_init(device_, nullptr);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(device_);
    if (auto set_threads =
            (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"))
      set_threads(backend_, threads);
    if (auto extra = (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(
            reg, "ggml_backend_dev_get_extra_bufts"))
      for (ggml_backend_buffer_type_t* buft = extra(device_); buft && *buft; ++buft) extra_.push_back(*buft);
  }
  ~CpuBackend() { ggml_backend_free(backend_); }
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  // Where llama.cpp would keep such a matrix: the first extra buffer type whose kernel multiplies
  // it (asked as llama.cpp asks, with a placeholder buffer), else plain memory.
  ggml_backend_buffer_type_t weight_buffer_type(ggml_type type, const MatrixShape& shape) const {
    if (shape.repackable) {
      for (ggml_backend_buffer_type_t buft : extra_) {
        ContextPtr context = tensor_context(3);
        ggml_tensor* weight = ggml_new_tensor_2d(context.get(), type, shape.row, shape.rows);
        ggml_tensor* input = ggml_new_tensor_2d(context.get(), GGML_TYPE_F32, shape.row, 1);
        ggml_tensor* product = ggml_mul_mat(context.get(), weight, input);
        BufferPtr placeholder(ggml_backend_buft_alloc_buffer(buft, 0));
        weight->buffer = placeholder.get();
        if (ggml_backend_dev_supports_op(device_, product)) return buft;
      }
    }
    return ggml_backend_dev_buffer_type(device_);
  }

  ggml_backend_t get() const { return backend_; }

 private:
  ggml_backend_dev_t device_ = nullptr;
  ggml_backend_t backend_ = nullptr;
  std::vector<ggml_backend_buffer_type_t> extra_;
};

// A matrix of `type` filled with rounded random weights: a band of rows quantized once and
// repeated (the kernels' speed does not depend on the values).
std::vector<char> random_matrix(ggml_type type, const MatrixShape& shape) {
  const int64_t band = std::min<int64_t>(shape.rows, 64);
  std::vector<float> weights(size_t(band * shape.row));
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& w : weights) w = normal(random);
  const size_t row_bytes = ggml_row_size(type, shape.row);
  std::vector<char> rows(row_bytes * size_t(band));
  ggml_quantize_chunk(type, weights.data(), rows.data(), 0, band, shape.row, nullptr);
  std::vector<char> matrix(row_bytes * size_t(shape.rows));
  for (int64_t r = 0; r < shape.rows; r += band)
    std::copy_n(rows.begin(), size_t(std::min(band, shape.rows - r)) * row_bytes, matrix.begin() + r * row_bytes);
  return matrix;
}

// Median times of one multiplication of a `type` matrix of `shape` by each pass size: copies of
// the matrix filling twice the last-level cache are multiplied in turn, as the layers of a pass
// are, and the graph's time is divided by the copies. (At most 4096 copies: a matrix that small
// costs little in any type, and a larger graph would time the scheduling.)
std::vector<double> time_type(const CpuBackend& cpu, ggml_type type, const MatrixShape& shape,
                              const std::vector<int>& tokens, int rounds) {
  const size_t matrix_bytes = ggml_row_size(type, shape.row) * size_t(shape.rows);
  const size_t copies =
      std::clamp<size_t>((2 * last_level_cache_bytes() + matrix_bytes - 1) / matrix_bytes, 2, 4096);
  ContextPtr weights_context = tensor_context(copies);
  std::vector<ggml_tensor*> weights;
  for (size_t i = 0; i < copies; ++i)
    weights.push_back(ggml_new_tensor_2d(weights_context.get(), type, shape.row, shape.rows));
  BufferPtr weight_buffer(
      ggml_backend_alloc_ctx_tensors_from_buft(weights_context.get(), cpu.weight_buffer_type(type, shape)));
  if (!weight_buffer) throw Error("no memory for " + std::to_string(matrix_bytes * copies) + " bytes of weights to time");
  const std::vector<char> data = random_matrix(type, shape);
  for (ggml_tensor* w : weights) ggml_backend_tensor_set(w, data.data(), 0, data.size());

  std::vector<double> medians;
  for (int n : tokens) {
    ContextPtr pass_context = tensor_context(copies + 1, copies + 1);
    ggml_tensor* input = ggml_new_tensor_2d(pass_context.get(), GGML_TYPE_F32, shape.row, n);
    ggml_set_input(input);
    ggml_cgraph* graph = ggml_new_graph_custom(pass_context.get(), copies + 1, false);
    for (ggml_tensor* w : weights) {
      ggml_tensor* product = ggml_mul_mat(pass_context.get(), w, input);
      ggml_set_output(product);
      ggml_build_forward_expand(graph, product);
    }
    std::unique_ptr<ggml_gallocr, void (*)(ggml_gallocr_t)> allocator(
        ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu.get())), ggml_gallocr_free);
    if (!ggml_gallocr_alloc_graph(allocator.get(), graph)) throw Error("no memory for the activations to time");
    std::vector<float> activations(size_t(shape.row) * size_t(n), 0.5f);
    ggml_backend_tensor_set(input, activations.data(), 0, activations.size() * sizeof(float));
    std::vector<double> samples;
    for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
      const auto start = Clock::now();
      if (ggml_backend_graph_compute(cpu.get(), graph) != GGML_STATUS_SUCCESS)
        throw Error(std::string("llama.cpp could not multiply a ") + ggml_type_name(type) + " matrix");
      if (round > 0)
        samples.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count() / double(copies));
    }
    medians.push_back(median(samples));
  }
  return medians;
}

}  // namespace

bool MatrixShape::operator<(const MatrixShape& other) const {
  return std::tie(row, rows, repackable) < std::tie(other.row, other.rows, other.repackable);
}

std::string TypeCostTable::key(ggml_type type, const MatrixShape& shape) {
  return std::string(ggml_type_name(type)) + " " + std::to_string(shape.row) + "x" + std::to_string(shape.rows) +
         (shape.repackable ? "" : " in place");
}

double TypeCostTable::cost(ggml_type type, const MatrixShape& shape, size_t index) const {
  auto found = ms.find(key(type, shape));
  if (found == ms.end() || index >= found->second.size()) throw Error("no time was measured for " + key(type, shape));
  return found->second[index];
}

Json TypeCostTable::to_json() const { return {{"tokens", tokens}, {"ms", ms}}; }

void from_json(const Json& json, TypeCostTable& table) {
  json.at("tokens").get_to(table.tokens);
  json.at("ms").get_to(table.ms);
}

TypeCostTable measure_type_costs(const std::vector<ggml_type>& types, const std::vector<MatrixShape>& shapes,
                                 const std::vector<int>& tokens, int threads, int rounds,
                                 const ProgressCallback& progress) {
  if (tokens.empty() || rounds < 1) throw Error("timing the types needs pass sizes and at least one round");
  CpuBackend cpu(resolved_threads(threads));
  TypeCostTable table;
  table.tokens = tokens;
  size_t done = 0;
  const size_t total = shapes.size() * types.size();
  for (const MatrixShape& shape : shapes) {
    for (ggml_type type : types) {
      if (shape.row % ggml_blck_size(type) == 0)
        table.ms[TypeCostTable::key(type, shape)] = time_type(cpu, type, shape, tokens, rounds);
      report(progress, "timing weight types", ++done, total);
    }
  }
  return table;
}

TypeCostTable cached_type_costs(const std::string& measurements_dir, const std::string& model_path,
                                const std::vector<ggml_type>& types,
                                const std::vector<MatrixShape>& shapes, const std::vector<int>& tokens,
                                int threads, const ProgressCallback& progress) {
  threads = resolved_threads(threads);
  std::string key = cpu_model() + "|" + std::to_string(threads);
  for (ggml_type type : types) key += std::string("|") + ggml_type_name(type);
  for (const MatrixShape& shape : shapes) key += "|" + TypeCostTable::key(GGML_TYPE_F32, shape);
  for (int n : tokens) key += "|" + std::to_string(n);
  const std::string path =
      measurement_path(measurements_dir, "type-costs", model_path, key, "-t" + std::to_string(threads) + build_flavor());
  if (auto saved = read_measurement<TypeCostTable>(path); saved && saved->tokens == tokens) return *saved;
  TypeCostTable table = measure_type_costs(types, shapes, tokens, threads, 5, progress);
  write_measurement(path, table.to_json());
  return table;
}

}  // namespace sw
