#include "engine/measure/cost_curve.h"

#include "engine/measure/pass_costs.h"
#include "engine/model/context.h"
#include "util/measurement_cache.h"

#include <algorithm>
#include <chrono>

namespace sw {
namespace {

// `count` ordinary text tokens (no special-token path is timed), repeating if need be.
std::vector<llama_token> filler_tokens(const LoadedModel& model, int count) {
  const std::vector<llama_token> text = model.tokenize(std::string(size_t(count), 'a') + " b", false);
  std::vector<llama_token> out;
  for (int i = 0; i < count; ++i) out.push_back(text[size_t(i) % text.size()]);
  return out;
}

}  // namespace

int CostCurve::padded_size(int n, double margin) const {
  if (n < 1 || n > max_tokens()) return n;
  int best = n;
  for (int m = n + 1; m <= max_tokens(); ++m) {
    if (cost(m) < cost(best)) best = m;
  }
  return cost(best) < cost(n) * (1 - margin) ? best : n;
}

int CostCurve::free_size(int n, double margin) const {
  int padded = padded_size(n, margin);
  if (padded < 1 || padded > max_tokens()) return n;
  int most = padded;
  for (int m = padded + 1; m <= max_tokens(); ++m) {
    if (cost(m) <= cost(padded)) most = m;
  }
  return most;
}

double CostCurve::kept_rows_ms(int rows) const {
  const int widest = int(rows_ms.size());
  if (rows <= 1 || widest < 2) return 0;
  if (rows <= widest) return rows_ms[size_t(rows - 1)];
  return rows_ms.back() * (rows - 1) / (widest - 1);
}

double CostCurve::pass_ms(int n, int rows) const {
  const double extra_rows = kept_rows_ms(rows);
  const int last = max_tokens();
  if (n <= last) return cost(n) + extra_rows;
  const double step = last > 1 ? std::max(0.0, cost(last) - cost(last - 1)) : cost(last);
  return std::max(cost(last) + step * (n - last), n * wide_ms_per_token) + extra_rows;
}

std::vector<double> rows_curve(double ms_per_kept_row) {
  return ms_per_kept_row > 0 ? std::vector<double>{0, ms_per_kept_row} : std::vector<double>{};
}

PassCostTable measure_cost_table(Context& context, const LoadedModel& model, int max_tokens, int rounds,
                                 int context_tokens) {
  using Clock = std::chrono::steady_clock;
  const llama_seq_id seq = Context::kScratch;
  const std::vector<llama_token> text = filler_tokens(model, context_tokens + max_tokens);
  auto token = [&](int i) { return text[size_t(i)]; };
  PassCounter unused;
  context.drop(seq);
  std::vector<BatchToken> prefix;
  for (int i = 0; i < context_tokens; ++i) prefix.push_back({token(i), i, {seq}, i + 1 == context_tokens});
  context.decode(prefix, unused);
  auto timed_pass = [&](int n, bool every_row) {
    std::vector<BatchToken> batch;
    for (int i = 0; i < n; ++i) batch.push_back({token(i), llama_pos(context_tokens + i), {seq}, every_row || i + 1 == n});
    auto start = Clock::now();
    context.decode(batch, unused);
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    context.drop(seq, context_tokens);
    return ms;
  };
  std::vector<std::vector<double>> one_row(static_cast<size_t>(max_tokens)), all_rows(static_cast<size_t>(max_tokens));
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
    for (int n = 1; n <= max_tokens; ++n) {
      const double one = timed_pass(n, false);
      const double all = n > 1 ? timed_pass(n, true) : one;
      if (round == 0) continue;
      one_row[size_t(n - 1)].push_back(one);
      all_rows[size_t(n - 1)].push_back(all);
    }
  }
  context.drop(seq);
  PassCostTable table;
  std::vector<double> per_row;
  for (int n = 1; n <= max_tokens; ++n) {
    table.one_row_ms.push_back(median(one_row[size_t(n - 1)]));
    table.all_rows_ms.push_back(median(all_rows[size_t(n - 1)]));
    if (n > 1) per_row.push_back(std::max(0.0, table.all_rows_ms.back() - table.one_row_ms.back()) / (n - 1));
  }
  if (!per_row.empty()) table.ms_per_kept_row = median(per_row);
  return table;
}

CostCurve curve_of(const PassCostTable& table) {
  CostCurve curve{table.one_row_ms};
  for (size_t i = 0; i < table.all_rows_ms.size() && i < table.one_row_ms.size(); ++i)
    curve.rows_ms.push_back(std::max(0.0, table.all_rows_ms[i] - table.one_row_ms[i]));
  return curve;
}

Speed measure_prefill_and_decode(Context& context, const LoadedModel& model, int prompt_tokens, int decode_tokens,
                                 int rounds) {
  using Clock = std::chrono::steady_clock;
  const std::vector<llama_token> text = filler_tokens(model, prompt_tokens + decode_tokens);
  const std::vector<llama_token> prompt(text.begin(), text.begin() + prompt_tokens), next(text.begin() + prompt_tokens, text.end());
  std::vector<double> prefill, decode;
  PassCounter unused;
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
    context.clear();
    auto start = Clock::now();
    context.append(prompt, unused);
    auto read = Clock::now();
    for (llama_token token : next) context.append({token}, unused);
    auto done = Clock::now();
    if (round == 0) continue;
    prefill.push_back(std::chrono::duration<double, std::milli>(read - start).count());
    decode.push_back(std::chrono::duration<double, std::milli>(done - read).count() / decode_tokens);
  }
  context.clear();
  return {prompt_tokens, decode_tokens, median(prefill), median(decode)};
}

PassCostTable measure_pass_costs(const Model& model, int max_tokens, int rounds) {
  if (max_tokens < 1 || max_tokens > 64) throw Error("max_tokens for a cost curve must be 1..64");
  if (rounds < 1) throw Error("rounds must be at least 1");
  if (loaded(model).params.vocab_only) throw Error("a model loaded with vocab_only cannot run passes");
  Context context(loaded(model), 1024);
  const PassCostTable table = measure_cost_table(context, loaded(model), max_tokens, rounds);
  // The measurement also starts the estimates a session learns from (pass_costs.h).
  PassCosts kept = kept_pass_costs(loaded(model));
  for (int n = 1; n <= std::min(max_tokens, PassCosts::kWidths); ++n) {
    kept.record(n, table.one_row_ms[size_t(n - 1)]);
    if (n > 1) kept.record(n, table.all_rows_ms[size_t(n - 1)], n);
  }
  keep_pass_costs(loaded(model), kept);
  return table;
}

Speed measure_speed(const Model& model, int prompt_tokens, int decode_tokens, int rounds) {
  if (prompt_tokens < 1 || decode_tokens < 1 || rounds < 1)
    throw Error("a speed measurement needs a prompt, tokens to decode and at least one round");
  if (loaded(model).params.vocab_only) throw Error("a model loaded with vocab_only cannot run passes");
  Context context(loaded(model), prompt_tokens + decode_tokens + 1);
  return measure_prefill_and_decode(context, loaded(model), prompt_tokens, decode_tokens, rounds);
}

}  // namespace sw
