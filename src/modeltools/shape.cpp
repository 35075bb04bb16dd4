#include "schemaweaver/shape.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include <ggml.h>
#include <gguf.h>

#include "engine/model/model.h"
#include "modeltools/gguf_metadata.h"
#include "modeltools/importance.h"
#include "modeltools/text_reader.h"
#include "util/files.h"

namespace sw {
namespace {

// ---------------------------------------------------------------- the spec

// "0-9,12,15" -> 0, 1, ..., 9, 12, 15
std::vector<int> parse_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    int first = 0, last = 0;
    char tail = 0;
    if (std::sscanf(part.c_str(), "%d-%d%c", &first, &last, &tail) == 2 && first <= last) {
      for (int i = first; i <= last; ++i) out.push_back(i);
    } else if (std::sscanf(part.c_str(), "%d%c", &first, &tail) == 1) {
      out.push_back(first);
    } else {
      throw Error("shape: '" + part + "' in " + what + " is not a number or a range");
    }
  }
  if (out.empty()) throw Error("shape: " + what + " lists nothing");
  return out;
}

int one_number(const std::string& text, const std::string& what) {
  const std::vector<int> values = parse_list(text, what);
  if (values.size() != 1) throw Error("shape: " + what + " takes one number, not '" + text + "'");
  return values[0];
}

// ---------------------------------------------------------------- the source

// The source file with every tensor's data in memory, and its shape.
struct Source : ModelShape {
  gguf_context* gguf = nullptr;
  ggml_context* data = nullptr;
  std::string path;

  explicit Source(const std::string& file) : path(file) {
    gguf_init_params params{false, &data};
    gguf = gguf_init_from_file(file.c_str(), params);
    if (!gguf) throw Error("cannot read '" + file + "' as a GGUF file");
  }
  ~Source() {
    gguf_free(gguf);
    ggml_free(data);
  }
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
};

void read_shape(Source& s) { static_cast<ModelShape&>(s) = read_model_shape(s.gguf, s.path); }

ggml_tensor* source_tensor(const Source& s, const std::string& name) {
  ggml_tensor* t = ggml_get_tensor(s.data, name.c_str());
  if (!t) throw Error("'" + s.path + "' has no tensor '" + name + "'");
  return t;
}

// ---------------------------------------------------------------- the plan

struct Plan {
  std::vector<int> layers;
  std::vector<int> ffn;
  std::vector<bool> attention;
  int width = 0;                               // model width (embedding length)
  std::vector<std::vector<int64_t>> channels;  // per kept layer: the FFN channels kept (empty: all)
  std::vector<int64_t> residual;               // model-width channels kept (empty: all)
};

// Rows of every quantization type a narrower model's matrices may be quantized to hold whole
// blocks of this many weights.
constexpr int kWidthStep = 32;

Plan make_plan(const Source& s, const ShapeSpec& spec) {
  Plan plan;
  if (spec.layers.empty()) {
    plan.layers.resize(size_t(s.layers));
    std::iota(plan.layers.begin(), plan.layers.end(), 0);
  } else {
    plan.layers = spec.layers;
  }
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const int layer = plan.layers[i];
    if (layer < 0 || layer >= s.layers)
      throw Error("shape: layer " + std::to_string(layer) + " does not exist (the model has " +
                  std::to_string(s.layers) + ")");
    if (i > 0 && layer <= plan.layers[i - 1])
      throw Error("shape: the kept layers must be listed in ascending order, once each");
  }
  const std::set<int> skipped(spec.skip_attention.begin(), spec.skip_attention.end());
  for (int layer : skipped) {
    if (std::find(plan.layers.begin(), plan.layers.end(), layer) == plan.layers.end())
      throw Error("shape: attention skipped in layer " + std::to_string(layer) + ", which is not kept");
  }
  for (int layer : plan.layers) plan.attention.push_back(skipped.count(layer) == 0);
  // llama.cpp takes the head size from the first layer.
  if (!plan.attention.front()) throw Error("shape: the first kept layer must keep its attention");
  if (spec.ffn.size() > 1 && spec.ffn.size() != plan.layers.size())
    throw Error("shape: " + std::to_string(spec.ffn.size()) + " FFN widths for " +
                std::to_string(plan.layers.size()) + " kept layers (give one width, or one per kept layer)");
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const int width = spec.ffn.empty() ? s.ffn : spec.ffn.size() == 1 ? spec.ffn[0] : spec.ffn[i];
    const ggml_tensor* down = source_tensor(s, "blk." + std::to_string(plan.layers[i]) + ".ffn_down.weight");
    const int64_t block = ggml_blck_size(down->type);
    if (width <= 0 || width > s.ffn || width % block != 0)
      throw Error("shape: FFN width " + std::to_string(width) + " for layer " +
                  std::to_string(plan.layers[i]) + " must be a multiple of " + std::to_string(block) +
                  " (its down projection's blocks) from " + std::to_string(block) + " to " +
                  std::to_string(s.ffn));
    plan.ffn.push_back(width);
  }
  plan.width = spec.width == 0 ? s.embedding : spec.width;
  if (plan.width <= 0 || plan.width > s.embedding || plan.width % kWidthStep != 0)
    throw Error("shape: model width " + std::to_string(plan.width) + " must be a multiple of " +
                std::to_string(kWidthStep) + " from " + std::to_string(kWidthStep) + " to " +
                std::to_string(s.embedding));
  return plan;
}

// ---------------------------------------------------------------- tensors

// The statistic of the named matrix's input, or null if it was not measured at this width.
const ChannelImportance* statistic(const ImportanceMap& importance, const std::string& name, int64_t size) {
  auto found = importance.find(name);
  return found != importance.end() && int64_t(found->second.mean_square.size()) == size ? &found->second : nullptr;
}

std::vector<float> row_floats(const ggml_tensor* t, int64_t row) {
  std::vector<float> out(size_t(t->ne[0]));
  const char* data = static_cast<const char*>(t->data) + size_t(row) * t->nb[1];
  if (t->type == GGML_TYPE_F32)
    std::memcpy(out.data(), data, out.size() * sizeof(float));
  else
    ggml_get_type_traits(t->type)->to_float(data, out.data(), t->ne[0]);
  return out;
}

// The FFN channels a narrower layer keeps: by the mean square of the channel's activation
// (the down projection's input) times the energy of the channel's output weights, ascending.
std::vector<int64_t> strongest_channels(const ggml_tensor* down, const ChannelImportance* importance,
                                        int keep) {
  std::vector<double> score(size_t(down->ne[0]), 0.0);
  for (int64_t r = 0; r < down->ne[1]; ++r) {
    std::vector<float> row = row_floats(down, r);
    for (size_t j = 0; j < row.size(); ++j) score[j] += double(row[j]) * double(row[j]);
  }
  if (importance)
    for (size_t j = 0; j < score.size(); ++j) score[j] *= double(importance->mean_square[j]);
  std::vector<int64_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](int64_t a, int64_t b) { return score[size_t(a)] > score[size_t(b)]; });
  order.resize(size_t(keep));
  std::sort(order.begin(), order.end());
  return order;
}

// The matrix that reads a norm's output, whose input statistic is that output's: a layer's query
// projection (attention norm), up projection (FFN norm), or the output matrix (the final norm;
// the embedding table when the two are tied).
std::string reader_of(const std::string& norm, const ImportanceMap& importance) {
  auto replaced = [&](const std::string& from, const std::string& to) {
    return norm.substr(0, norm.size() - from.size()) + to;
  };
  auto ends = [&](const std::string& end) {
    return norm.size() >= end.size() && norm.compare(norm.size() - end.size(), end.size(), end) == 0;
  };
  if (ends("attn_norm.weight")) return replaced("attn_norm.weight", "attn_q.weight");
  if (ends("ffn_norm.weight")) return replaced("ffn_norm.weight", "ffn_up.weight");
  return importance.count("output.weight") ? "output.weight" : "token_embd.weight";
}

// The model-width channels a narrower model keeps: those most present in what the kept layers
// and the output read from the residual stream (every norm's output, each reader's statistic
// scaled to mean 1 so that no single layer's scale decides), ascending.
std::vector<int64_t> strongest_residual_channels(const Source& s, const Plan& plan, const ImportanceMap& importance) {
  std::vector<std::string> norms{"output_norm.weight"};
  for (size_t k = 0; k < plan.layers.size(); ++k) {
    const std::string block = "blk." + std::to_string(plan.layers[k]) + ".";
    if (plan.attention[k]) norms.push_back(block + "attn_norm.weight");
    norms.push_back(block + "ffn_norm.weight");
  }
  std::vector<double> score(size_t(s.embedding), 0.0);
  for (const std::string& norm : norms) {
    const ChannelImportance* read = statistic(importance, reader_of(norm, importance), s.embedding);
    if (!read) continue;
    double mean = 0;
    for (float v : read->mean_square) mean += v / double(s.embedding);
    for (size_t c = 0; c < score.size() && mean > 0; ++c) score[c] += read->mean_square[c] / mean;
  }
  std::vector<int64_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[size_t(a)] > score[size_t(b)]; });
  order.resize(size_t(plan.width));
  std::sort(order.begin(), order.end());
  return order;
}

// RMS normalisation over the kept channels divides by their RMS, larger than the source's RMS
// over all channels when the strongest are kept; the norm's weights are scaled by the ratio,
// measured on the calibration text, so that its output keeps the source's scale. The reader's
// statistic is E[(x_c / rms * w_c)^2], so dividing by w_c^2 gives channel c's share of the
// mean square, E[x_c^2 / rms^2], which sums to the width over all channels.
float norm_compensation(const ggml_tensor* norm, const std::vector<int64_t>& kept, const ImportanceMap& importance) {
  const ChannelImportance* read = statistic(importance, reader_of(norm->name, importance), norm->ne[0]);
  if (!read || norm->type != GGML_TYPE_F32) return 1.0f;
  const float* w = static_cast<const float*>(norm->data);
  double kept_share = 0;
  for (int64_t c : kept) {
    const double w2 = double(w[c]) * double(w[c]);
    if (w2 > 1e-12) kept_share += read->mean_square[size_t(c)] / w2;
  }
  return kept_share > 0 ? float(std::sqrt(kept_share / double(kept.size()))) : 1.0f;
}

// A type whose blocks fit rows of `width` weights: the tensor's own, or the near type llama.cpp's
// quantizer also falls back to when a k-quant's 256-weight super-blocks do not fit.
ggml_type type_for_width(ggml_type type, int64_t width) {
  if (width % ggml_blck_size(type) == 0) return type;
  switch (type) {
    case GGML_TYPE_Q2_K:
    case GGML_TYPE_Q3_K:
      return GGML_TYPE_Q4_0;
    case GGML_TYPE_Q4_K:
      return GGML_TYPE_Q5_0;
    case GGML_TYPE_Q5_K:
      return GGML_TYPE_Q5_1;
    default:
      return GGML_TYPE_Q8_0;
  }
}

// How one tensor is cut: the rows (ne[1]; a vector's elements) kept, in this order, and the
// columns (ne[0]) kept; empty: all. A vector is also scaled.
struct Cut {
  std::vector<int64_t> rows, columns;
  float scale = 1.0f;
  bool none() const { return rows.empty() && columns.empty() && scale == 1.0f; }
};

ggml_tensor* cut_vector(ggml_context* ctx, const ggml_tensor* t, const Cut& cut) {
  if (t->type != GGML_TYPE_F32) throw Error(std::string("cannot cut the quantized vector ") + t->name);
  const std::vector<int64_t>& rows = cut.rows;
  ggml_tensor* out = ggml_new_tensor_1d(ctx, t->type, rows.empty() ? t->ne[0] : int64_t(rows.size()));
  const float* in = static_cast<const float*>(t->data);
  float* values = static_cast<float*>(out->data);
  for (int64_t i = 0; i < out->ne[0]; ++i) values[i] = in[rows.empty() ? i : rows[size_t(i)]] * cut.scale;
  return out;
}

// Rows alone are copied as they are stored; cut columns are quantized again, with the input
// channels' statistic (if measured) as the quantizer's importance.
ggml_tensor* cut_matrix(ggml_context* ctx, const ggml_tensor* t, const Cut& cut, const ChannelImportance* importance) {
  const int64_t height = cut.rows.empty() ? t->ne[1] : int64_t(cut.rows.size());
  auto source_row = [&](int64_t r) { return cut.rows.empty() ? r : cut.rows[size_t(r)]; };
  if (cut.columns.empty()) {
    ggml_tensor* out = ggml_new_tensor_2d(ctx, t->type, t->ne[0], height);
    for (int64_t r = 0; r < height; ++r)
      std::memcpy(static_cast<char*>(out->data) + size_t(r) * t->nb[1],
                  static_cast<const char*>(t->data) + size_t(source_row(r)) * t->nb[1], t->nb[1]);
    return out;
  }
  const int64_t width = int64_t(cut.columns.size());
  const ggml_type type = type_for_width(t->type, width);
  ggml_tensor* out = ggml_new_tensor_2d(ctx, type, width, height);
  std::vector<float> weights;
  if (importance)
    for (int64_t c : cut.columns) weights.push_back(importance->mean_square[size_t(c)]);
  std::vector<float> kept(static_cast<size_t>(width));
  ggml_quantize_init(type);
  for (int64_t r = 0; r < height; ++r) {
    std::vector<float> row = row_floats(t, source_row(r));
    for (size_t i = 0; i < kept.size(); ++i) kept[i] = row[size_t(cut.columns[i])];
    ggml_quantize_chunk(type, kept.data(), static_cast<char*>(out->data) + size_t(r) * out->nb[1], 0, 1, width,
                        weights.empty() ? nullptr : weights.data());
  }
  return out;
}

ggml_tensor* apply_cut(ggml_context* ctx, const ggml_tensor* t, const Cut& cut, const ImportanceMap& importance) {
  if (cut.none()) {
    ggml_tensor* out = ggml_dup_tensor(ctx, t);
    std::memcpy(out->data, t->data, ggml_nbytes(t));
    return out;
  }
  if (ggml_n_dims(t) == 1) return cut_vector(ctx, t, cut);
  return cut_matrix(ctx, t, cut, statistic(importance, t->name, t->ne[0]));
}

// qwen2 rotates dimension pairs (i, i + d/2) of each head, llama's layout (2i, 2i + 1): the
// rows of the query and key projections (and their biases) are reordered to match.
std::vector<int64_t> rotary_to_llama(int64_t rows, int64_t head_dim) {
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t base = 0; base < rows; base += head_dim)
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      order[size_t(base + 2 * i)] = base + i;
      order[size_t(base + 2 * i + 1)] = base + i + head_dim / 2;
    }
  return order;
}

// ---------------------------------------------------------------- metadata

void copy_value(gguf_context* out, const std::string& key, const gguf_context* src, int64_t id) {
  const char* k = key.c_str();
  switch (gguf_get_kv_type(src, id)) {
    case GGUF_TYPE_UINT8:
      gguf_set_val_u8(out, k, gguf_get_val_u8(src, id));
      break;
    case GGUF_TYPE_INT8:
      gguf_set_val_i8(out, k, gguf_get_val_i8(src, id));
      break;
    case GGUF_TYPE_UINT16:
      gguf_set_val_u16(out, k, gguf_get_val_u16(src, id));
      break;
    case GGUF_TYPE_INT16:
      gguf_set_val_i16(out, k, gguf_get_val_i16(src, id));
      break;
    case GGUF_TYPE_UINT32:
      gguf_set_val_u32(out, k, gguf_get_val_u32(src, id));
      break;
    case GGUF_TYPE_INT32:
      gguf_set_val_i32(out, k, gguf_get_val_i32(src, id));
      break;
    case GGUF_TYPE_FLOAT32:
      gguf_set_val_f32(out, k, gguf_get_val_f32(src, id));
      break;
    case GGUF_TYPE_UINT64:
      gguf_set_val_u64(out, k, gguf_get_val_u64(src, id));
      break;
    case GGUF_TYPE_INT64:
      gguf_set_val_i64(out, k, gguf_get_val_i64(src, id));
      break;
    case GGUF_TYPE_FLOAT64:
      gguf_set_val_f64(out, k, gguf_get_val_f64(src, id));
      break;
    case GGUF_TYPE_BOOL:
      gguf_set_val_bool(out, k, gguf_get_val_bool(src, id));
      break;
    case GGUF_TYPE_STRING:
      gguf_set_val_str(out, k, gguf_get_val_str(src, id));
      break;
    case GGUF_TYPE_ARRAY: {
      const size_t n = gguf_get_arr_n(src, id);
      if (gguf_get_arr_type(src, id) == GGUF_TYPE_STRING) {
        std::vector<const char*> strings(n);
        for (size_t i = 0; i < n; ++i) strings[i] = gguf_get_arr_str(src, id, i);
        gguf_set_arr_str(out, k, strings.data(), n);
      } else {
        gguf_set_arr_data(out, k, gguf_get_arr_type(src, id), gguf_get_arr_data(src, id), n);
      }
      break;
    }
    default:
      throw Error("cannot copy the setting '" + key + "'");
  }
}

void set_per_layer(gguf_context* out, const std::string& key, const std::vector<int32_t>& values) {
  gguf_set_arr_data(out, key.c_str(), GGUF_TYPE_INT32, values.data(), values.size());
}

// The source's settings under the "deci" architecture, with the shape's per-layer ones.
gguf_context* shaped_metadata(const Source& s, const Plan& plan, const std::string& name) {
  gguf_context* out = gguf_init_empty();
  const std::string prefix = s.arch + ".";
  for (int64_t id = 0; id < gguf_get_n_kv(s.gguf); ++id) {
    const std::string key = gguf_get_key(s.gguf, id);
    if (key == "general.alignment") continue;  // the writer aligns the data its own way
    copy_value(out, key.compare(0, prefix.size(), prefix) == 0 ? "deci." + key.substr(prefix.size()) : key,
               s.gguf, id);
  }
  gguf_set_val_str(out, "general.architecture", "deci");
  gguf_set_val_str(out, "general.name", name.c_str());
  gguf_set_val_u32(out, "deci.block_count", uint32_t(plan.layers.size()));
  gguf_set_val_u32(out, "deci.embedding_length", uint32_t(plan.width));
  gguf_set_val_u32(out, "deci.attention.key_length", uint32_t(s.head_dim));
  gguf_set_val_u32(out, "deci.attention.value_length", uint32_t(s.head_dim));
  std::vector<int32_t> ffn(plan.ffn.begin(), plan.ffn.end()), heads, kv_heads;
  for (bool attention : plan.attention) {
    heads.push_back(attention ? s.heads : 0);
    kv_heads.push_back(attention ? s.kv_heads : 0);
  }
  set_per_layer(out, "deci.feed_forward_length", ffn);
  set_per_layer(out, "deci.attention.head_count", heads);
  set_per_layer(out, "deci.attention.head_count_kv", kv_heads);
  return out;
}

// ---------------------------------------------------------------- the shaped tensors

bool is_attention(const std::string& part) {
  return part.compare(0, 5, "attn_") == 0;
}

// How the tensor of kept layer `k` named by `part` ("ffn_down.weight") is cut: its FFN to the
// kept channels, its model-width side to the kept residual channels, and (qwen2) its rotary
// rows into llama's order.
Cut layer_cut(const Source& s, const Plan& plan, size_t k, const std::string& part, const ggml_tensor* t,
              const ImportanceMap& importance) {
  const std::vector<int64_t>& ffn = plan.channels[k];
  const std::vector<int64_t>& residual = plan.residual;
  Cut cut;
  if (part == "attn_norm.weight" || part == "ffn_norm.weight") {
    cut.rows = residual;
    if (!residual.empty()) cut.scale = norm_compensation(t, residual, importance);
  } else if (part == "attn_q.weight" || part == "attn_k.weight" || part == "attn_v.weight") {
    cut.columns = residual;
  } else if (part == "attn_output.weight") {
    cut.rows = residual;
  } else if (part == "ffn_gate.weight" || part == "ffn_up.weight") {
    cut.rows = ffn;
    cut.columns = residual;
  } else if (part == "ffn_down.weight") {
    cut.rows = residual;
    cut.columns = ffn;
  } else if (part == "ffn_gate.bias" || part == "ffn_up.bias") {
    cut.rows = ffn;
  }
  const bool rotary =
      part == "attn_q.weight" || part == "attn_q.bias" || part == "attn_k.weight" || part == "attn_k.bias";
  if (s.arch == "qwen2" && rotary)
    cut.rows = rotary_to_llama(ggml_n_dims(t) == 1 ? t->ne[0] : t->ne[1], s.head_dim);
  return cut;
}

// How a tensor outside the blocks is cut: only a narrower width changes them.
Cut global_cut(const Plan& plan, const std::string& name, const ggml_tensor* t, const ImportanceMap& importance) {
  Cut cut;
  if (plan.residual.empty()) return cut;
  if (name == "token_embd.weight" || name == "output.weight") {
    cut.columns = plan.residual;
  } else if (name == "output_norm.weight") {
    cut.rows = plan.residual;
    cut.scale = norm_compensation(t, plan.residual, importance);
  }
  return cut;
}

// The shaped tensor of a source tensor, or null if the shape drops it (a dropped layer, the
// attention of a layer without it).
ggml_tensor* shaped_tensor(ggml_context* ctx, const Source& s, const Plan& plan, const std::string& name,
                           const ggml_tensor* t, const ImportanceMap& importance) {
  int layer = -1, used = 0;
  if (std::sscanf(name.c_str(), "blk.%d.%n", &layer, &used) != 1 || used == 0) {
    const Cut cut = global_cut(plan, name, t, importance);
    if (cut.none()) return const_cast<ggml_tensor*>(t);  // written as it is
    ggml_tensor* out = apply_cut(ctx, t, cut, importance);
    ggml_set_name(out, name.c_str());
    return out;
  }
  auto kept = std::find(plan.layers.begin(), plan.layers.end(), layer);
  if (kept == plan.layers.end()) return nullptr;
  const size_t k = size_t(kept - plan.layers.begin());
  const std::string part = name.substr(size_t(used));
  if (!plan.attention[k] && is_attention(part)) return nullptr;
  ggml_tensor* out = apply_cut(ctx, t, layer_cut(s, plan, k, part, t, importance), importance);
  ggml_set_name(out, ("blk." + std::to_string(k) + "." + part).c_str());
  return out;
}

}  // namespace

ShapeSpec parse_shape(const std::string& text) {
  ShapeSpec spec;
  std::stringstream parts(text);
  std::string part;
  while (parts >> part) {
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (key == "layers")
      spec.layers = parse_list(value, "layers");
    else if (key == "ffn")
      spec.ffn = parse_list(value, "ffn");
    else if (key == "skip-attention")
      spec.skip_attention = parse_list(value, "skip-attention");
    else if (key == "width")
      spec.width = one_number(value, "width");
    else
      throw Error("shape: '" + part + "' is not a part of a shape (known: layers=, ffn=, skip-attention=, width=N)");
  }
  return spec;
}

std::string ShapeResult::describe() const {
  if (ffn.empty()) return "no layers";
  const int skipped = int(std::count(attention.begin(), attention.end(), false));
  const auto [narrowest, widest] = std::minmax_element(ffn.begin(), ffn.end());
  std::string widths = *narrowest == *widest ? std::to_string(*widest)
                                             : std::to_string(*narrowest) + "-" + std::to_string(*widest);
  std::string text = std::to_string(layers.size()) + " of " + std::to_string(source_layers) + " layers, FFN " +
                     widths + "/" + std::to_string(source_ffn) + ", attention skipped in " +
                     std::to_string(skipped) + " layer(s)";
  if (embedding < source_embedding)
    text += ", width " + std::to_string(embedding) + "/" + std::to_string(source_embedding);
  return text;
}

Json ShapeResult::to_json() const {
  std::vector<int> attention_flags(attention.begin(), attention.end());
  return {{"source_architecture", source_architecture},
          {"source_layers", source_layers},
          {"source_ffn", source_ffn},
          {"source_embedding", source_embedding},
          {"layers", layers},
          {"ffn", ffn},
          {"attention", attention_flags},
          {"embedding", embedding},
          {"heads", heads},
          {"head_dim", head_dim},
          {"parameters", parameters},
          {"embedding_parameters", embedding_parameters},
          {"bytes", bytes},
          {"description", describe()}};
}

ShapeResult shape_model(const ShapeOptions& options) {
  Source source(options.model_path);
  read_shape(source);
  Plan plan = make_plan(source, options.shape);
  ImportanceMap importance;
  const bool narrower_width = plan.width < source.embedding;
  if (narrower_width || std::any_of(plan.ffn.begin(), plan.ffn.end(), [&](int w) { return w < source.ffn; })) {
    if (options.calibration_path.empty())
      throw Error("a narrower FFN or model width keeps the channels that carry most on a calibration text: "
                  "give one");
    ModelParams params;
    params.path = options.model_path;
    params.threads = options.threads;
    auto model = Model::load(params);
    importance = measure_importance(loaded(*model), read_text(options.calibration_path, "calibration text"),
                                    options.calibration_tokens, options.progress)
                     .importance;
  }
  for (size_t k = 0; k < plan.layers.size(); ++k) {
    const int layer = plan.layers[k];
    const ggml_tensor* down = source_tensor(source, "blk." + std::to_string(layer) + ".ffn_down.weight");
    plan.channels.push_back(plan.ffn[k] < source.ffn
                                ? strongest_channels(down, statistic(importance, down->name, down->ne[0]), plan.ffn[k])
                                : std::vector<int64_t>{});
  }
  if (narrower_width) plan.residual = strongest_residual_channels(source, plan, importance);
  ShapeResult result;
  result.source_architecture = source.arch;
  result.source_layers = source.layers;
  result.source_ffn = source.ffn;
  result.layers = plan.layers;
  result.ffn = plan.ffn;
  result.attention = plan.attention;
  result.source_embedding = source.embedding;
  result.embedding = plan.width;
  result.heads = source.heads;
  result.head_dim = source.head_dim;

  // A matrix cut to a narrower width may be quantized to a type with more bits per weight.
  const size_t room = ggml_get_mem_size(source.data) * (narrower_width ? 2 : 1);
  ggml_init_params params{room + size_t(gguf_get_n_tensors(source.gguf)) * ggml_tensor_overhead(), nullptr, false};
  ggml_context* ctx = ggml_init(params);
  gguf_context* out = shaped_metadata(source, plan, result.describe());
  try {
    for (int64_t id = 0; id < gguf_get_n_tensors(source.gguf); ++id) {
      const std::string name = gguf_get_tensor_name(source.gguf, id);
      ggml_tensor* shaped = shaped_tensor(ctx, source, plan, name, source_tensor(source, name), importance);
      if (!shaped) continue;
      gguf_add_tensor(out, shaped);
      if (name == "token_embd.weight") result.embedding_parameters = uint64_t(ggml_nelements(shaped));
      result.parameters += uint64_t(ggml_nelements(shaped));
      result.bytes += ggml_nbytes(shaped);
    }
    report(options.progress, "writing", 0, 1);
    write_atomically(options.output_path, "the shaped model", [&](const std::string& partial) {
      if (!gguf_write_to_file(out, partial.c_str(), false)) throw Error("cannot write '" + options.output_path + "'");
    });
  } catch (...) {
    gguf_free(out);
    ggml_free(ctx);
    throw;
  }
  gguf_free(out);
  ggml_free(ctx);
  report(options.progress, "writing", 1, 1);
  return result;
}

}  // namespace sw
