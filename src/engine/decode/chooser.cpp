#include "engine/decode/chooser.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sw {
namespace {

uint64_t seed_of(const Sampling& sampling) {
  if (sampling.seed) return *sampling.seed;
  if (sampling.temperature == 0) return 0;  // nothing is drawn
  std::random_device device;
  return (uint64_t(device()) << 32) ^ device();
}

// A uniform draw in [0, 1) from 53 bits (the same on every standard library, unlike
// std::uniform_real_distribution).
double uniform(std::mt19937_64& random) { return double(random() >> 11) * 0x1.0p-53; }

}  // namespace

Chooser::Chooser(const Sampling& sampling) : sampling_(sampling), random_(seed_of(sampling)) { check(sampling); }

void Chooser::check(const Sampling& sampling) {
  if (!(sampling.temperature >= 0) || sampling.temperature > 100) throw Error("temperature must be from 0 to 100");
  if (sampling.top_k < 0) throw Error("top_k must be 0 (off) or positive");
  if (!(sampling.top_p > 0 && sampling.top_p <= 1)) throw Error("top_p must be above 0 and at most 1");
  if (!(sampling.min_p >= 0 && sampling.min_p < 1)) throw Error("min_p must be from 0 to below 1");
}

Chooser& Chooser::greedy() {
  static Chooser greedy{Sampling{}};
  return greedy;
}

void Chooser::carry(llama_token token) {
  if (samples()) carried_ = token;
}

llama_token Chooser::choose(const float* logits, int n_vocab, const std::function<bool(llama_token)>& allowed,
                            const std::function<bool(llama_token)>& may_be_allowed, float* margin) {
  // The greedy pick comes first even for a draw: it finds the best allowed logit, which bounds
  // the draw's candidates (min_p is relative to it), checking the best tokens only - a draw's own
  // scan could not bound itself without it.
  const llama_token greedy = pick_greedy(logits, n_vocab, allowed, may_be_allowed, margin);
  if (!samples() || greedy < 0) return greedy;
  if (carried_) {
    const llama_token token = *carried_;
    carried_.reset();
    if (allowed(token)) return token;  // else the carry was not this decision's: draw anew
  }
  return draw(logits, n_vocab, allowed, may_be_allowed, logits[greedy]);
}

llama_token Chooser::draw(const float* logits, int n_vocab, const std::function<bool(llama_token)>& allowed,
                          const std::function<bool(llama_token)>& may_be_allowed, float best) {
  // The candidates: allowed tokens that min_p keeps (those within kDrawnRange of the best where
  // it is 0), by logit (ties by id), top_k of them at most. The cheap necessary condition is
  // asked first, since a constraint may reject most of them; the order is sorted as far as needed.
  const float range = sampling_.min_p > 0 ? std::min(kDrawnRange, -std::log(sampling_.min_p)) : kDrawnRange;
  std::vector<llama_token> near;
  for (llama_token t = 0; t < n_vocab; ++t) {
    if (logits[t] >= best - range && (!may_be_allowed || may_be_allowed(t))) near.push_back(t);
  }
  auto better = [&](llama_token a, llama_token b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t sorted = sampling_.top_k > 0 ? std::min(near.size(), size_t(4 * sampling_.top_k)) : near.size();
  std::partial_sort(near.begin(), near.begin() + long(sorted), near.end(), better);
  std::vector<llama_token> candidates;
  for (size_t i = 0; i < near.size(); ++i) {
    if (sampling_.top_k > 0 && int(candidates.size()) == sampling_.top_k) break;
    if (i == sorted) std::sort(near.begin() + long(sorted), near.end(), better), sorted = near.size();
    if (allowed(near[i])) candidates.push_back(near[i]);
  }
  // top_p on the distribution at temperature 1 over what is left (the temperature comes last, as
  // in llama.cpp's chain); it keeps the best candidate at least.
  std::vector<double> weight;
  double total = 0;
  for (llama_token t : candidates) total += weight.emplace_back(std::exp(double(logits[t] - best)));
  size_t kept = 0;
  for (double mass = 0; kept < candidates.size() && (kept == 0 || mass < sampling_.top_p * total); ++kept)
    mass += weight[kept];
  // The temperature, then one draw.
  double scaled_total = 0;
  for (size_t i = 0; i < kept; ++i) {
    weight[i] = std::exp(double(logits[candidates[i]] - best) / sampling_.temperature);
    scaled_total += weight[i];
  }
  double u = uniform(random_) * scaled_total;
  for (size_t i = 0; i < kept; ++i) {
    if (u < weight[i]) return candidates[i];
    u -= weight[i];
  }
  return candidates[kept - 1];
}

}  // namespace sw
