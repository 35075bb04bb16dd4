#include "schemaweaver/pack.h"

#include <ggml.h>
#include <gguf.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "engine/model/model.h"
#include "modeltools/gguf_metadata.h"
#include "modeltools/importance.h"
#include "modeltools/output_probe.h"
#include "modeltools/text_reader.h"
#include "schemaweaver/engine.h"
#include "util/measurement_cache.h"

namespace sw {
namespace {

// Matrices the forward pass multiplies with activations (or looks up, for the embeddings),
// which llama.cpp's quantizer may store in any of its types.
bool packable(const std::string& name) {
  static const std::set<std::string> kinds = {"attn_q",      "attn_k",   "attn_v", "attn_qkv",
                                              "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
  if (name == "token_embd.weight" || name == "output.weight") return true;
  int block = -1, used = 0;
  char kind[32] = {};
  return std::sscanf(name.c_str(), "blk.%d.%31[a-z_].weight%n", &block, kind, &used) == 2 &&
         size_t(used) == name.size() && kinds.count(kind) > 0;
}

// Candidate types by the length of their blocks: 256-weight super-blocks (k-quants) where rows
// allow them, else 32-weight blocks.
const std::vector<ggml_type> kSuperBlockTypes = {GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
                                                 GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_0};
const std::vector<ggml_type> kBlockTypes = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                                            GGML_TYPE_Q8_0};
constexpr int64_t kSampleRows = 128;  // rows per matrix on which each type's error is estimated

struct Choice {
  ggml_type type;
  uint64_t bytes;
  double error;
};

struct Matrix {
  std::string name;
  int layer = -1;
  ggml_type source = GGML_TYPE_F32;
  int64_t row = 0, rows = 0;
  uint64_t offset = 0;          // of its data in the file
  std::vector<Choice> choices;  // fewer bytes first, each cutting the error per byte less
  size_t chosen = 0;
};

// The tensor list of a GGUF file.
struct GgufIndex {
  std::vector<Matrix> matrices;
  uint64_t other_bytes = 0;  // tensors kept as they are
  uint64_t source_bytes = 0;
};

GgufIndex read_index(const std::string& path) {
  GgufIndex index;
  for (const GgufTensorInfo& t : read_tensor_infos(path)) {
    index.source_bytes += t.bytes;
    if (t.dims != 2 || t.ne[0] % 32 != 0 || !packable(t.name)) {
      index.other_bytes += t.bytes;
      continue;
    }
    Matrix m;
    m.name = t.name;
    int layer = -1;
    if (std::sscanf(t.name.c_str(), "blk.%d.", &layer) == 1) m.layer = layer;
    m.source = t.type;
    m.row = t.ne[0];
    m.rows = t.ne[1];
    m.offset = t.offset;
    index.matrices.push_back(std::move(m));
  }
  return index;
}

// `n` weights stored as `type`, as floats.
std::vector<float> decode(ggml_type type, const char* data, size_t n, const std::string& name) {
  std::vector<float> out(n);
  const ggml_type_traits* traits = ggml_get_type_traits(type);
  if (type == GGML_TYPE_F32)
    std::memcpy(out.data(), data, n * sizeof(float));
  else if (traits->to_float)
    traits->to_float(data, out.data(), int64_t(n));
  else
    throw Error(name + " is stored as " + ggml_type_name(type) + ", which cannot be read back");
  return out;
}

// Rows of `width` floats stored as `type`; `weight` (may be null) tells the quantizer which
// input channels matter most.
std::vector<char> encode(ggml_type type, const std::vector<float>& rows, int64_t width, const float* weight) {
  const int64_t count = int64_t(rows.size()) / width;
  std::vector<char> packed(ggml_row_size(type, width) * size_t(count));
  ggml_quantize_chunk(type, rows.data(), packed.data(), 0, count, width, weight);
  return packed;
}

// The rows rounded to `type` and read back.
std::vector<float> round_trip(ggml_type type, const std::vector<float>& rows, int64_t width,
                              const float* weight) {
  return decode(type, encode(type, rows, width, weight).data(), rows.size(), ggml_type_name(type));
}

// Evenly spaced rows of the matrix, as floats.
std::vector<float> sample_rows(std::ifstream& file, const Matrix& m, int64_t count) {
  const size_t row_bytes = ggml_row_size(m.source, m.row);
  std::vector<float> rows;
  rows.reserve(size_t(count * m.row));
  std::vector<char> raw(row_bytes);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t r = k * m.rows / count;
    file.seekg(std::streamoff(m.offset + uint64_t(r) * row_bytes));
    if (!file.read(raw.data(), std::streamsize(row_bytes)))
      throw Error("the model file ends inside " + m.name);
    std::vector<float> row = decode(m.source, raw.data(), size_t(m.row), m.name);
    rows.insert(rows.end(), row.begin(), row.end());
  }
  return rows;
}

// The matrix's bytes as stored in the file.
std::vector<char> read_matrix(std::ifstream& file, const Matrix& m) {
  std::vector<char> raw(ggml_row_size(m.source, m.row) * size_t(m.rows));
  file.seekg(std::streamoff(m.offset));
  if (!file.read(raw.data(), std::streamsize(raw.size())))
    throw Error("the model file ends inside " + m.name);
  return raw;
}

// The output error `changed` adds to the matrix relative to its output: the squared error of
// each weight times its input channel's mean square, over the same for the weights. `weight`
// may be null (no statistic: every channel counts the same).
double relative_error(const std::vector<float>& rows, const std::vector<float>& changed, int64_t width,
                      const float* weight) {
  double error = 0, signal = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double w = weight ? double(weight[i % size_t(width)]) : 1.0;
    const double d = double(changed[i]) - double(rows[i]);
    error += w * d * d;
    signal += w * double(rows[i]) * double(rows[i]);
  }
  return signal > 0 ? error / signal : 0.0;
}

// Keeps the choices on the lower convex hull of (bytes, error): along it each extra byte buys
// less than the one before, so adding bytes greedily by the best rate is optimal.
std::vector<Choice> lower_hull(std::vector<Choice> choices) {
  std::sort(choices.begin(), choices.end(), [](const Choice& a, const Choice& b) {
    return a.bytes < b.bytes || (a.bytes == b.bytes && a.error < b.error);
  });
  std::vector<Choice> hull;
  for (const Choice& c : choices) {
    if (!hull.empty() && c.error >= hull.back().error) continue;  // more bytes, no less error
    while (hull.size() >= 2) {
      const Choice& a = hull[hull.size() - 2];
      const Choice& b = hull.back();
      // b is above the segment from a to c: going straight to c buys more per byte.
      double via_b = (a.error - b.error) / double(b.bytes - a.bytes);
      double direct = (a.error - c.error) / double(c.bytes - a.bytes);
      if (via_b > direct) break;
      hull.pop_back();
    }
    hull.push_back(c);
  }
  return hull;
}

// The matrix's statistic, or null if the calibration never saw it multiply activations.
const float* importance_of(const Calibration& calibration, const Matrix& m) {
  auto found = calibration.importance.find(m.name);
  if (found == calibration.importance.end() || int64_t(found->second.mean_square.size()) != m.row)
    return nullptr;
  return found->second.mean_square.data();
}

const std::vector<ggml_type>& candidate_types(const Matrix& m) {
  return m.row % 256 == 0 ? kSuperBlockTypes : kBlockTypes;
}

// Each matrix's choices among `types` (its candidate types if empty), each with the relative
// output error it adds, estimated on sampled rows.
void estimate_choices(const std::string& path, const Calibration& calibration,
                      const std::vector<ggml_type>& types, std::vector<Matrix>& matrices) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot open model file '" + path + "'");
  for (Matrix& m : matrices) {
    const int64_t count = std::min(m.rows, kSampleRows);
    std::vector<float> rows = sample_rows(file, m, count);
    const float* weight = importance_of(calibration, m);
    std::vector<Choice> choices;
    for (ggml_type type : types.empty() ? candidate_types(m) : types) {
      uint64_t bytes = ggml_row_size(type, m.row) * uint64_t(m.rows);
      choices.push_back(
          {type, bytes, relative_error(rows, round_trip(type, rows, m.row, weight), m.row, weight)});
    }
    m.choices = lower_hull(std::move(choices));
    m.chosen = 0;
  }
}

// Matrices of the same relative error do not hurt the output alike (an error in a matrix that
// writes to the residual stream of an early layer travels through all later ones). One matrix
// at a time is rounded to its coarsest candidate type (and stored back in its own type), the
// model reads a few calibration tokens, and the mean KL divergence of its next-token
// distributions from the unchanged model's, per unit of the relative error that rounding added,
// is that matrix's scale: its errors times the scale estimate what each choice costs the
// output. Keyed by matrix name; a matrix no pass reads has none.
std::map<std::string, double> measure_sensitivity(const LoadedModel& model, const std::string& path,
                                                  const Calibration& calibration,
                                                  const std::vector<llama_token>& tokens,
                                                  const std::vector<Matrix>& matrices) {
  OutputProbe probe(model, tokens);
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot open model file '" + path + "'");
  std::map<std::string, double> scales;
  for (const Matrix& m : matrices) {
    const std::vector<char> original = read_matrix(file, m);
    const std::vector<float> weights = decode(m.source, original.data(), size_t(m.row * m.rows), m.name);
    const float* importance = importance_of(calibration, m);
    const std::vector<char> changed = encode(
        m.source, round_trip(candidate_types(m).front(), weights, m.row, importance), m.row, importance);
    const double error =
        relative_error(weights, decode(m.source, changed.data(), weights.size(), m.name), m.row, importance);
    std::optional<double> divergence = probe.divergence_with(m.name, changed, original);
    if (divergence && error > 0) scales[m.name] = *divergence / error;
  }
  return scales;
}

void weigh_by_output(const LoadedModel& model, const std::string& path, const Calibration& calibration,
                     const std::string& text, int tokens_wanted, std::vector<Matrix>& matrices) {
  std::vector<llama_token> tokens = model.tokenize(text, false);
  tokens.resize(std::min(tokens.size(), size_t(tokens_wanted)));
  // The scales depend on the model file, the calibration text and how much of it was read:
  // measured once (a pass per matrix) and kept like the pass costs.
  const std::string cache =
      measurement_path("sensitivity", path, std::to_string(std::hash<std::string>{}(text)) + "|" +
                                                std::to_string(calibration.tokens) + "|" + std::to_string(tokens.size()));
  std::map<std::string, double> scales =
      read_measurement<std::map<std::string, double>>(cache).value_or(std::map<std::string, double>{});
  if (scales.empty()) {
    scales = measure_sensitivity(model, path, calibration, tokens, matrices);
    write_measurement(cache, Json(scales));
  }
  double largest = 0;
  for (const auto& [name, scale] : scales) largest = std::max(largest, scale);
  // A matrix no pass read (none in the models here) counts as the most sensitive one.
  for (Matrix& m : matrices) {
    auto found = scales.find(m.name);
    for (Choice& c : m.choices) c.error *= found != scales.end() ? found->second : largest;
  }
}

// Before anything is measured: the budget must hold every matrix at its smallest type.
void check_budget(const std::vector<Matrix>& matrices, uint64_t budget) {
  uint64_t smallest = 0;
  for (const Matrix& m : matrices) {
    uint64_t least = UINT64_MAX;
    for (ggml_type type : candidate_types(m))
      least = std::min<uint64_t>(least, ggml_row_size(type, m.row) * uint64_t(m.rows));
    smallest += least;
  }
  if (smallest > budget)
    throw Error("a budget of " + std::to_string(budget) +
                " bytes for the matrices is below the smallest packing (" + std::to_string(smallest) +
                " bytes, every matrix at its smallest type)");
}

// llama.cpp's quantizer would store a matrix whose rows are not whole blocks of the type in
// another type, so a uniform packing that does not fit is refused rather than mislabelled.
void check_fits(const std::vector<Matrix>& matrices, ggml_type type) {
  for (const Matrix& m : matrices)
    if (m.row % ggml_blck_size(type) != 0)
      throw Error("type " + std::string(ggml_type_name(type)) + " does not fit '" + m.name +
                  "': its rows of " + std::to_string(m.row) + " weights are not whole blocks of " +
                  std::to_string(ggml_blck_size(type)));
}

// From every matrix at its smallest choice, moves up whichever step removes the most
// error per byte while the budget allows.
void allocate(std::vector<Matrix>& matrices, uint64_t budget) {
  uint64_t used = 0;
  for (const Matrix& m : matrices) used += m.choices[m.chosen].bytes;
  while (true) {
    Matrix* best = nullptr;
    double best_rate = 0;
    for (Matrix& m : matrices) {
      if (m.chosen + 1 >= m.choices.size()) continue;
      const Choice& now = m.choices[m.chosen];
      const Choice& next = m.choices[m.chosen + 1];
      if (used - now.bytes + next.bytes > budget) continue;
      double rate = (now.error - next.error) / double(next.bytes - now.bytes);
      if (!best || rate > best_rate) best = &m, best_rate = rate;
    }
    if (!best) break;
    used += best->choices[best->chosen + 1].bytes - best->choices[best->chosen].bytes;
    best->chosen += 1;
  }
}

// A quantized type by name, in any case: ggml spells them "q3_K", people "Q3_K".
ggml_type quantized_type(const std::string& name) {
  auto lower = [](std::string text) {
    for (char& c : text) c = char(std::tolower((unsigned char)c));
    return text;
  };
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const ggml_type_traits* traits = ggml_get_type_traits(ggml_type(t));
    if (traits->type_name && traits->is_quantized && lower(name) == lower(traits->type_name))
      return ggml_type(t);
  }
  throw Error("unknown quantization type '" + name + "' (e.g. Q2_K, Q3_K, Q4_K, Q8_0)");
}

// The pattern that matches exactly `name` (llama.cpp takes tensor type overrides as regexes).
std::string exact_pattern(const std::string& name) {
  std::string pattern = "^";
  for (char c : name) {
    if (std::strchr(".^$|()[]{}*+?\\", c)) pattern += '\\';
    pattern += c;
  }
  return pattern + "$";
}

// llama.cpp's quantizer writes `output` with the chosen types and the importance matrix.
void write_packed(const PackOptions& options, const std::vector<Matrix>& matrices,
                  const Calibration& calibration, int threads) {
  std::vector<std::string> patterns;
  patterns.reserve(matrices.size());
  std::vector<llama_model_tensor_override> overrides;
  for (const Matrix& m : matrices) {
    patterns.push_back(exact_pattern(m.name));
    overrides.push_back({patterns.back().c_str(), m.choices[m.chosen].type});
  }
  overrides.push_back({nullptr, GGML_TYPE_COUNT});
  std::vector<llama_model_imatrix_data> imatrix;
  for (const auto& [name, c] : calibration.importance)
    imatrix.push_back({name.c_str(), c.mean_square.data(), c.mean_square.size()});
  imatrix.push_back({nullptr, nullptr, 0});
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.nthread = threads;
  qp.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;  // every packable matrix is overridden; the rest is kept
  qp.allow_requantize = true;
  qp.quantize_output_tensor = true;
  qp.imatrix = imatrix.data();
  qp.tt_overrides = overrides.data();
  const std::string partial = options.output_path + ".partial";
  uint32_t rc = llama_model_quantize(options.model_path.c_str(), partial.c_str(), &qp);
  if (rc != 0) {
    std::filesystem::remove(partial);
    throw Error("llama.cpp could not write the packed model: " + llama_last_errors());
  }
  std::filesystem::rename(partial, options.output_path);
}

}  // namespace

Json PackResult::to_json() const {
  Json tensors_json = Json::array();
  for (const PackedTensor& t : tensors)
    tensors_json.push_back({{"name", t.name},
                            {"layer", t.layer},
                            {"source_type", t.source_type},
                            {"type", t.type},
                            {"elements", t.elements},
                            {"bytes", t.bytes},
                            {"error", t.error}});
  return {{"source_bytes", source_bytes},       {"packed_bytes", packed_bytes},
          {"bits_per_weight", bits_per_weight}, {"calibration_tokens", calibration_tokens},
          {"error_unit", error_unit},           {"tensors", tensors_json}};
}

PackResult pack_model(const PackOptions& options) {
  const bool by_budget = options.bits_per_weight > 0 || options.budget_bytes > 0;
  if (by_budget == !options.uniform_type.empty())
    throw Error("give a budget (bits per weight or bytes) or a uniform type, not both or neither");
  const ggml_type uniform = by_budget ? GGML_TYPE_COUNT : quantized_type(options.uniform_type);
  std::string text = read_text(options.calibration_path, "calibration text");
  GgufIndex index = read_index(options.model_path);
  if (index.matrices.empty()) throw Error("'" + options.model_path + "' has no weight matrices to pack");
  uint64_t elements = 0;
  for (const Matrix& m : index.matrices) elements += uint64_t(m.row * m.rows);
  const uint64_t budget =
      options.bits_per_weight > 0                ? uint64_t(options.bits_per_weight * double(elements) / 8.0)
      : options.budget_bytes > index.other_bytes ? options.budget_bytes - index.other_bytes
                                                 : 0;
  if (by_budget)
    check_budget(index.matrices, budget);
  else
    check_fits(index.matrices, uniform);
  const bool weigh = by_budget && options.sensitivity_tokens > 0;
  ModelParams params;
  params.path = options.model_path;
  params.threads = options.threads;
  params.mmap = !weigh;  // the sensitivity probe writes weights: they must not be a read-only mapping
  auto model = Model::load(params);
  const LoadedModel& impl = loaded(*model);
  Calibration calibration = measure_importance(impl, text, options.calibration_tokens);
  // A uniform packing only needs the error of its one type.
  estimate_choices(options.model_path, calibration,
                   by_budget ? std::vector<ggml_type>{} : std::vector<ggml_type>{uniform}, index.matrices);
  if (weigh)
    weigh_by_output(impl, options.model_path, calibration, text, options.sensitivity_tokens, index.matrices);
  if (by_budget) allocate(index.matrices, budget);
  write_packed(options, index.matrices, calibration, impl.threads);
  PackResult result;
  result.source_bytes = index.source_bytes;
  result.calibration_tokens = calibration.tokens;
  result.error_unit = weigh ? "nats" : "relative";
  uint64_t packed = 0;
  for (const Matrix& m : index.matrices) {
    const Choice& c = m.choices[m.chosen];
    packed += c.bytes;
    result.tensors.push_back({m.name, m.layer, ggml_type_name(m.source), ggml_type_name(c.type),
                              uint64_t(m.row * m.rows), c.bytes, c.error});
  }
  result.packed_bytes = read_index(options.output_path).source_bytes;
  result.bits_per_weight = 8.0 * double(packed) / double(elements);
  return result;
}

}  // namespace sw
