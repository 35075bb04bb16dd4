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
#include "modeltools/allocation.h"
#include "modeltools/gguf_metadata.h"
#include "modeltools/importance.h"
#include "modeltools/output_probe.h"
#include "modeltools/text_reader.h"
#include "modeltools/type_costs.h"
#include "schemaweaver/engine.h"
#include "util/files.h"
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
// For speed: the types llama.cpp repacks into its interleaved kernels on common CPUs (Q4_0,
// IQ4_NL, Q4_K) and the finer ones beside them (no type under 4 bits: they cost accuracy that
// no speed buys back here). The measured times decide among them; a type that is slower here
// and no more accurate drops out of each matrix's hull.
const std::vector<ggml_type> kSpeedTypes = {GGML_TYPE_Q4_0, GGML_TYPE_IQ4_NL, GGML_TYPE_Q5_0, GGML_TYPE_Q4_K,
                                            GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,   GGML_TYPE_Q8_0};
// The passes a tool call makes, by the tokens they carry: the share of passes of each size over
// the 100-case BFCL sample of 2026-12-04 (Qwen2.5-Coder 0.5B and 1.5B; constrained, jump-forward
// and schemaweaver counting alike; sizes over 4 counted as 8). Mostly one-token passes.
const std::map<int, double> kToolCallPassMix = {{1, 0.72}, {2, 0.12}, {3, 0.04}, {4, 0.01}, {8, 0.11}};
constexpr int64_t kSampleRows = 128;  // rows per matrix on which each type's error is estimated

struct Matrix {
  std::string name;
  int layer = -1;
  ggml_type source = GGML_TYPE_F32;
  int64_t row = 0, rows = 0;
  bool in_place = false;            // the token embeddings: kept for lookups, multiplied where they lie
  bool multiplied = true;           // false: only looked up (no pass time depends on its type)
  uint64_t offset = 0;              // of its data in the file
  std::vector<TypeChoice> choices;  // its lower hull, cheapest first
  size_t chosen = 0;

  MatrixShape shape() const { return {row, rows, !in_place}; }
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
    m.in_place = t.name == "token_embd.weight";
    index.matrices.push_back(std::move(m));
  }
  // Without an output matrix of its own the model multiplies by its token embeddings.
  const bool shared_output = std::none_of(index.matrices.begin(), index.matrices.end(),
                                          [](const Matrix& m) { return m.name == "output.weight"; });
  for (Matrix& m : index.matrices) m.multiplied = !m.in_place || shared_output;
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

// The types a matrix may take when packing for speed: the fast list's types that fit its rows,
// and its own type (which the quantizer can write without an importance matrix).
std::vector<ggml_type> speed_candidate_types(const Matrix& m) {
  std::vector<ggml_type> types;
  for (ggml_type type : kSpeedTypes)
    if (m.row % ggml_blck_size(type) == 0) types.push_back(type);
  if (std::find(types.begin(), types.end(), m.source) == types.end() && !ggml_quantize_requires_imatrix(m.source))
    types.push_back(m.source);
  return types;
}

// What a type of a matrix costs against the budget: its bytes, or, packing for speed, its
// estimated time in a pass of the mix (from the table measured on this CPU).
struct CostModel {
  const TypeCostTable* times = nullptr;  // null: bytes
  std::vector<double> shares;            // of the passes of each size in times->tokens

  double operator()(const Matrix& m, ggml_type type) const {
    if (!times) return double(ggml_row_size(type, m.row) * uint64_t(m.rows));
    if (!m.multiplied) return 0.0;
    double ms = 0;
    for (size_t i = 0; i < shares.size(); ++i) ms += shares[i] * times->cost(type, m.shape(), i);
    return ms;
  }
  // The least any allowed type of every matrix costs.
  double least(const std::vector<Matrix>& matrices,
               const std::function<std::vector<ggml_type>(const Matrix&)>& types_of) const {
    double total = 0;
    for (const Matrix& m : matrices) {
      std::vector<double> costs;
      for (ggml_type type : types_of(m)) costs.push_back((*this)(m, type));
      total += *std::min_element(costs.begin(), costs.end());
    }
    return total;
  }
};

// Each matrix's choices among the types `types_of` allows, each with its cost and the
// relative output error it adds, estimated on sampled rows; kept on their lower hull.
void estimate_choices(const std::string& path, const Calibration& calibration,
                      const std::function<std::vector<ggml_type>(const Matrix&)>& types_of, const CostModel& cost,
                      std::vector<Matrix>& matrices, const ProgressCallback& progress) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot open model file '" + path + "'");
  for (Matrix& m : matrices) {
    report(progress, "choices", size_t(&m - matrices.data()), matrices.size());
    const int64_t count = std::min(m.rows, kSampleRows);
    std::vector<float> rows = sample_rows(file, m, count);
    const float* weight = importance_of(calibration, m);
    std::vector<TypeChoice> choices;
    for (ggml_type type : types_of(m)) {
      choices.push_back({type, ggml_row_size(type, m.row) * uint64_t(m.rows), cost(m, type),
                         relative_error(rows, round_trip(type, rows, m.row, weight), m.row, weight)});
    }
    m.choices = lower_hull(std::move(choices));
    m.chosen = 0;
  }
  report(progress, "choices", matrices.size(), matrices.size());
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
                                                  const std::vector<Matrix>& matrices,
                                                  const ProgressCallback& progress) {
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
    report(progress, "sensitivity", size_t(&m - matrices.data()) + 1, matrices.size());
  }
  return scales;
}

void weigh_by_output(const LoadedModel& model, const std::string& path, const Calibration& calibration,
                     const std::string& text, int tokens_wanted, std::vector<Matrix>& matrices,
                     const ProgressCallback& progress) {
  std::vector<llama_token> tokens = model.tokenize(text, false);
  tokens.resize(std::min(tokens.size(), size_t(tokens_wanted)));
  // The scales depend on the model file, the calibration text and how much of it was read:
  // measured once (a pass per matrix) and kept like the pass costs.
  const std::string cache =
      measurement_path(model.params.measurements_dir, "sensitivity", path, stable_hash_hex(text) + "|" +
                                                std::to_string(calibration.tokens) + "|" + std::to_string(tokens.size()));
  std::map<std::string, double> scales =
      read_measurement<std::map<std::string, double>>(cache).value_or(std::map<std::string, double>{});
  if (scales.empty()) {
    scales = measure_sensitivity(model, path, calibration, tokens, matrices, progress);
    write_measurement(cache, Json(scales));
  }
  double largest = 0;
  for (const auto& [name, scale] : scales) largest = std::max(largest, scale);
  // A matrix no pass read (none in the models here) counts as the most sensitive one.
  for (Matrix& m : matrices) {
    auto found = scales.find(m.name);
    for (TypeChoice& c : m.choices) c.error *= found != scales.end() ? found->second : largest;
  }
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
  write_atomically(options.output_path, "the packed model", [&](const std::string& partial) {
    if (llama_model_quantize(options.model_path.c_str(), partial.c_str(), &qp) != 0)
      throw Error("llama.cpp could not write the packed model: " + llama_last_errors());
  });
}

// The pass mix, checked: sizes 1..64, shares positive; normalised to sum 1.
std::map<int, double> checked_mix(const std::map<int, double>& mix) {
  double total = 0;
  for (const auto& [tokens, share] : mix) {
    if (tokens < 1 || tokens > 64) throw Error("a pass in the mix carries 1 to 64 tokens, not " + std::to_string(tokens));
    if (!(share > 0)) throw Error("the share of passes of " + std::to_string(tokens) + " tokens must be positive");
    total += share;
  }
  std::map<int, double> normalised;
  for (const auto& [tokens, share] : mix) normalised[tokens] = share / total;
  return normalised;
}

// Packing for speed: the time of every type a matrix may take, and of its source type, on every
// shape of the model, measured (once) on this CPU.
TypeCostTable time_types(const PackOptions& options, const std::vector<Matrix>& matrices,
                         const std::map<int, double>& mix) {
  std::set<ggml_type> types;
  std::set<MatrixShape> shapes;
  for (const Matrix& m : matrices) {
    if (!m.multiplied) continue;
    shapes.insert(m.shape());
    types.insert(m.source);
    for (ggml_type type : speed_candidate_types(m)) types.insert(type);
  }
  std::vector<int> tokens;
  for (const auto& entry : mix) tokens.push_back(entry.first);
  return cached_type_costs(options.measurements_dir, options.model_path, {types.begin(), types.end()}, {shapes.begin(), shapes.end()}, tokens,
                           options.threads, options.progress);
}

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
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
                            {"pass_ms", t.pass_ms},
                            {"error", t.error}});
  return {{"source_bytes", source_bytes},       {"packed_bytes", packed_bytes},
          {"bits_per_weight", bits_per_weight}, {"calibration_tokens", calibration_tokens},
          {"source_pass_ms", source_pass_ms},   {"packed_pass_ms", packed_pass_ms},
          {"pass_mix", pass_mix},               {"error_unit", error_unit},
          {"tensors", tensors_json}};
}

PackResult pack_model(const PackOptions& options) {
  const bool by_bytes = options.bits_per_weight > 0 || options.budget_bytes > 0;
  const bool for_speed = options.time_fraction > 0;
  const bool uniform = !options.uniform_type.empty();
  if (int(by_bytes) + int(for_speed) + int(uniform) != 1)
    throw Error("give one budget: bytes (bits per weight or a size), time (a fraction of the source's) or a "
                "uniform type");
  const ggml_type uniform_type = uniform ? quantized_type(options.uniform_type) : GGML_TYPE_COUNT;
  std::string text = read_text(options.calibration_path, "calibration text");
  GgufIndex index = read_index(options.model_path);
  if (index.matrices.empty()) throw Error("'" + options.model_path + "' has no weight matrices to pack");
  uint64_t elements = 0;
  for (const Matrix& m : index.matrices) elements += uint64_t(m.row * m.rows);

  // The budget, checked against the cheapest packing before anything slow is measured.
  const std::function<std::vector<ggml_type>(const Matrix&)> types_of = [&](const Matrix& m) {
    return uniform ? std::vector<ggml_type>{uniform_type} : for_speed ? speed_candidate_types(m) : candidate_types(m);
  };
  const std::map<int, double> mix = for_speed ? checked_mix(options.pass_mix.empty() ? kToolCallPassMix : options.pass_mix)
                                              : std::map<int, double>{};
  TypeCostTable times;
  CostModel cost;
  double budget = 0, source_cost = 0;
  if (by_bytes) {
    budget = options.bits_per_weight > 0 ? double(uint64_t(options.bits_per_weight * double(elements) / 8.0))
             : options.budget_bytes > index.other_bytes ? double(options.budget_bytes - index.other_bytes)
                                                        : 0.0;
    const double smallest = cost.least(index.matrices, types_of);
    if (smallest > budget)
      throw Error("a budget of " + std::to_string(uint64_t(budget)) +
                  " bytes for the matrices is below the smallest packing (" + std::to_string(uint64_t(smallest)) +
                  " bytes, every matrix at its smallest type)");
  } else if (for_speed) {
    times = time_types(options, index.matrices, mix);
    cost = {&times, {}};
    for (const auto& entry : mix) cost.shares.push_back(entry.second);
    for (const Matrix& m : index.matrices) source_cost += cost(m, m.source);
    budget = options.time_fraction * source_cost;
    const double fastest = cost.least(index.matrices, types_of);
    if (fastest > budget)
      throw Error("no packing is that fast: with every matrix at its fastest type here a pass's products take " +
                  format_ms(fastest) + " (" + std::to_string(fastest / source_cost).substr(0, 4) +
                  " of the source's " + format_ms(source_cost) + "), over the budget of " + format_ms(budget));
  } else {
    check_fits(index.matrices, uniform_type);
  }

  const bool weigh = !uniform && options.sensitivity_tokens > 0;
  ModelParams params;
  params.path = options.model_path;
  params.threads = options.threads;
  params.measurements_dir = options.measurements_dir;
  params.mmap = !weigh;  // the sensitivity probe writes weights: they must not be a read-only mapping
  auto model = Model::load(params);
  const LoadedModel& impl = loaded(*model);
  Calibration calibration = measure_importance(impl, text, options.calibration_tokens, options.progress);
  estimate_choices(options.model_path, calibration, types_of, cost, index.matrices, options.progress);
  if (weigh)
    weigh_by_output(impl, options.model_path, calibration, text, options.sensitivity_tokens, index.matrices,
                    options.progress);
  if (!uniform) {
    std::vector<std::vector<TypeChoice>> hulls;
    for (const Matrix& m : index.matrices) hulls.push_back(m.choices);
    const std::vector<size_t> chosen = allocate(hulls, budget);
    for (size_t i = 0; i < chosen.size(); ++i) index.matrices[i].chosen = chosen[i];
  }
  report(options.progress, "writing", 0, 1);
  write_packed(options, index.matrices, calibration, impl.threads);
  report(options.progress, "writing", 1, 1);

  PackResult result;
  result.source_bytes = index.source_bytes;
  result.calibration_tokens = calibration.tokens;
  result.error_unit = weigh ? "nats" : "relative";
  result.pass_mix = mix;
  result.source_pass_ms = source_cost;
  uint64_t packed = 0;
  for (const Matrix& m : index.matrices) {
    const TypeChoice& c = m.choices[m.chosen];
    packed += c.bytes;
    const double pass_ms = for_speed ? c.cost : 0.0;
    result.packed_pass_ms += pass_ms;
    result.tensors.push_back({m.name, m.layer, ggml_type_name(m.source), ggml_type_name(c.type),
                              uint64_t(m.row * m.rows), c.bytes, pass_ms, c.error});
  }
  result.packed_bytes = read_index(options.output_path).source_bytes;
  result.bits_per_weight = 8.0 * double(packed) / double(elements);
  return result;
}

}  // namespace sw
