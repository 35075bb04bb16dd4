// The cost of a forward pass by the number of tokens it carries.
//
// On a CPU a decode pass streams all weights once, so on a memory-bound machine a pass carrying
// a few tokens costs little more than one carrying a single token; on a compute-bound one each
// token costs nearly its share; and the kernels add steps of their own (llama.cpp's repacked
// quantized kernels work on rows in groups, so 4 tokens can cost less than 3). A session learns
// the curve from its own passes (pass_costs.h); measure_cost_curve is the explicit measurement.
//
// A pass also pays for each row of logits it keeps: the output layer multiplies every kept row
// by the whole vocabulary. A prefill or a forced text keeps one row; a branch pass keeps one per
// branch, a write-back one per pick it verifies. On a small model with a large vocabulary
// (Gemma 3 270M: 262k tokens, most of its weights) a kept row costs most of a one-token pass.
// What rows add is a curve of its own, by their number: the output layer's kernels work on rows
// in groups, so on a 2-core AVX-512 Xeon Gemma's 4 kept rows added 7.3 ms and 5 rows 19.9 ms.
#pragma once

#include <string>
#include <vector>

#include "schemaweaver/measure.h"

namespace sw {

class Context;

struct CostCurve {
  std::vector<double> ms;  // ms[n - 1]: median time of a pass carrying n tokens, one row kept
  double wide_ms_per_token = 0;  // of passes wider than the curve (a prefill), where seen
  // rows_ms[r - 1]: what keeping the logits of r rows adds to a pass keeping one (rows_ms[0] is
  // 0); empty where no pass keeping more than one has been seen (rows then cost nothing).
  std::vector<double> rows_ms = {};

  int max_tokens() const { return int(ms.size()); }
  double cost(int n) const { return ms.at(size_t(n - 1)); }
  // What `rows` kept rows add to a pass keeping one; beyond the curve each further row costs
  // what a row cost on average at its widest count.
  double kept_rows_ms(int rows) const;
  // The time of a pass carrying n tokens and keeping the logits of `rows` of them, n beyond the
  // curve included: the curve's last step goes on, or the wide passes' cost per token where
  // that is more.
  double pass_ms(int n, int rows = 1) const;
  // The number of tokens a pass that must carry n should carry (its rows are the same either
  // way: placeholders keep none): the cheapest m >= n within the
  // curve, if it is cheaper than n by more than `margin` (measurement noise); else n.
  int padded_size(int n, double margin = 0.03) const;
  // The most tokens a pass that must carry n can carry for what its padded size costs anyway.
  int free_size(int n, double margin = 0.03) const;
};
// The rows curve of a single cost per kept row beyond the first (none where it is 0).
std::vector<double> rows_curve(double ms_per_kept_row);

// Measures passes of 1..max_tokens tokens keeping one row and keeping every row, in the
// context's scratch sequence, interleaved `rounds` times, after a prefix of `context_tokens`
// tokens (attention over a realistic cache).
PassCostTable measure_cost_table(Context& context, const LoadedModel& model, int max_tokens = 8, int rounds = 9,
                                 int context_tokens = 256);
// The curve a measured table gives: its passes keeping one row, and what its passes keeping
// every row added to them.
CostCurve curve_of(const PassCostTable& table);

// Prefill of `prompt_tokens` ordinary text tokens from an empty cache, then `decode_tokens`
// passes of one token each, `rounds` times (after a warm-up); medians.
Speed measure_prefill_and_decode(Context& context, const LoadedModel& model, int prompt_tokens, int decode_tokens,
                                 int rounds);

}  // namespace sw
