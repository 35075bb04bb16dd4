#include "engine/measure/pass_costs.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "engine/model/model.h"
#include "util/measurement_cache.h"
#include "util/window.h"

namespace sw {
namespace {

std::optional<double> median_of(const std::deque<double>& window) {
  if (window.empty()) return std::nullopt;
  return median(std::vector<double>(window.begin(), window.end()));
}

using Seen = std::array<std::optional<double>, PassCosts::kWidths>;

// The curve of 1..kWidths from the entries seen (the first one must be): one not seen lies
// between the nearest seen ones, beyond the last seen it follows `prior`, scaled to agree there.
std::vector<double> filled(const Seen& seen, const std::function<double(int)>& prior) {
  std::vector<double> curve;
  for (int w = 1; w <= PassCosts::kWidths; ++w) {
    if (seen[size_t(w - 1)]) {
      curve.push_back(*seen[size_t(w - 1)]);
      continue;
    }
    int below = w - 1, above = w + 1;
    while (!seen[size_t(below - 1)]) --below;
    while (above <= PassCosts::kWidths && !seen[size_t(above - 1)]) ++above;
    const double low = *seen[size_t(below - 1)];
    if (above <= PassCosts::kWidths) {
      const double high = *seen[size_t(above - 1)];
      curve.push_back(low + (high - low) * (w - below) / (above - below));
    } else {
      curve.push_back(low * prior(w) / prior(below));
    }
  }
  return curve;
}

}  // namespace

void PassCosts::record(int tokens, double ms, int rows) {
  if (tokens < 1 || !(ms > 0) || rows > tokens) return;
  recorded_ += 1;
  if (rows > 1) remember(by_rows_[size_t(std::min(rows, kWidths) - 1)], {tokens, rows, ms}, kWindow);
  else if (tokens <= kWidths) remember(by_width_[size_t(tokens - 1)], ms, kWindow);
  else remember(wide_per_token_, ms / tokens, kWindow);
}

std::array<std::optional<double>, PassCosts::kWidths> PassCosts::rows_seen(const CostCurve& curve) const {
  Seen seen;
  for (int r = 2; r <= kWidths; ++r) {
    std::vector<double> added;
    for (const RowsKept& pass : by_rows_[size_t(r - 1)])
      added.push_back(std::max(0.0, pass.ms - curve.pass_ms(pass.tokens)) * (r - 1) / (pass.rows - 1));
    if (!added.empty()) seen[size_t(r - 1)] = median(added);
  }
  return seen;
}

CostCurve PassCosts::estimate() const {
  if (pinned_) return *pinned_;
  Seen seen;
  for (int w = 1; w <= kWidths; ++w) seen[size_t(w - 1)] = median_of(by_width_[size_t(w - 1)]);
  if (!seen[0]) return {};
  const std::optional<double> per_token = median_of(wide_per_token_);
  const double one = *seen[0];
  // Without wide passes a pass is taken to cost its tokens' share of compute (no width is
  // cheaper than fewer tokens, so nothing is padded on a guess).
  auto prior = [&](int w) { return per_token ? std::max(one, w * *per_token) : one * w; };
  CostCurve curve{filled(seen, prior), per_token.value_or(0.0)};
  Seen rows = rows_seen(curve);
  if (std::any_of(rows.begin(), rows.end(), [](const std::optional<double>& r) { return r.has_value(); })) {
    rows[0] = 0.0;  // one row adds nothing
    curve.rows_ms = filled(rows, [](int r) { return double(r - 1); });
  }
  return curve;
}

Json PassCosts::to_json() const {
  Json widths = Json::array();
  for (const auto& window : by_width_) widths.push_back(std::vector<double>(window.begin(), window.end()));
  Json rows = Json::array();
  for (const auto& window : by_rows_) {
    for (const RowsKept& pass : window) rows.push_back({pass.tokens, pass.rows, pass.ms});
  }
  return {{"ms_by_width", widths},
          {"wide_ms_per_token", std::vector<double>(wide_per_token_.begin(), wide_per_token_.end())},
          {"tokens_rows_ms", rows}};
}

void PassCosts::restore(const Json& saved) {
  PassCosts read;
  try {
    const Json& widths = saved.at("ms_by_width");
    for (size_t w = 0; w < widths.size() && w < size_t(kWidths); ++w) {
      for (double ms : widths[w].get<std::vector<double>>()) read.record(int(w + 1), ms);
    }
    for (double ms : saved.at("wide_ms_per_token").get<std::vector<double>>())
      remember(read.wide_per_token_, ms, kWindow);
    // (absent where a run kept its estimates before kept rows were told apart)
    for (const Json& pass : saved.value("tokens_rows_ms", Json::array()))
      read.record(pass.at(0).get<int>(), pass.at(2).get<double>(), pass.at(1).get<int>());
  } catch (const std::exception&) {
    return;
  }
  read.recorded_ = 0;
  read.pinned_ = pinned_;
  *this = std::move(read);
}

std::string pass_costs_path(const LoadedModel& model) {
  return measurement_path(model.params.measurements_dir, "pass-costs", model.params.path, cpu_model() + "|" + std::to_string(model.threads),
                          "-t" + std::to_string(model.threads) + build_flavor());
}

PassCosts kept_pass_costs(const LoadedModel& model) {
  PassCosts costs;
  if (std::optional<Json> saved = read_measurement_json(pass_costs_path(model))) costs.restore(*saved);
  return costs;
}

void keep_pass_costs(const LoadedModel& model, const PassCosts& costs) {
  write_measurement(pass_costs_path(model), costs.to_json());
}

}  // namespace sw
