// What passes cost on this machine now, learnt from the passes the engine runs.
//
// Every pass is a measurement: the tokens it carried, the rows of logits it kept and its time.
// Per width of 1..kWidths tokens the estimate is the median of the last kWindow passes of that
// width keeping one row; a wide pass keeping one (a prompt's prefill) gives a cost per token. A
// pass keeping more rows (branches, a write-back, a draft) gives what its rows add: its time
// beyond the estimate for its width - per number of rows 2..kWidths the median of the last
// kWindow such passes (a pass keeping more rows counts at kWidths, its addition scaled by its
// rows but one). A pass slowed by another process moves
// no median alone, and estimates learnt under load are replaced as soon as passes cost less
// again: they follow what passes cost now. Nothing is measured up front: the first call of a
// model on a machine starts from its prompt's prefill and its first decoding passes (until a
// pass of one token has been seen there is no estimate, and nothing is padded), and the windows
// are kept between runs per model file, CPU, threads and build, so a later process starts from
// them.
#pragma once

#include <array>
#include <deque>
#include <optional>
#include <string>

#include "engine/measure/cost_curve.h"

namespace sw {

class PassCosts {
 public:
  static constexpr int kWidths = 8;
  static constexpr size_t kWindow = 9;

  void record(int tokens, double ms, int rows = 1);
  // Fixed costs instead of learnt ones (Session::use_pass_costs): passes no longer change them.
  void pin(CostCurve curve) { pinned_ = std::move(curve); }
  // The cost of passes of 1..kWidths tokens as estimated now: a width seen by its median; a
  // width not seen between the nearest seen ones, or beyond the widest seen along the prior
  // (the larger of a one-token pass and the wide passes' cost per token times the width).
  // Kept rows: a number of rows seen by its median, one not seen between the nearest seen ones
  // (one row adding nothing), beyond the most seen in proportion to them; nothing until a pass
  // keeping more than one has been seen.
  // Empty until a pass of one token has been seen.
  CostCurve estimate() const;
  size_t recorded() const { return recorded_; }  // passes seen by this object

  // The windows as JSON, kept between runs; restore() takes what to_json wrote (anything else is
  // ignored: a damaged file only costs the learning again).
  Json to_json() const;
  void restore(const Json& saved);

 private:
  std::array<std::deque<double>, kWidths> by_width_;  // ms of the last passes of each width
  std::deque<double> wide_per_token_;                 // ms per token of the last wide passes
  struct RowsKept {
    int tokens;
    int rows;
    double ms;
  };
  // [r - 1]: the last passes that kept r rows (the last window: kWidths or more)
  std::array<std::deque<RowsKept>, kWidths> by_rows_;
  // What 2..kWidths kept rows add, as seen (none where not), given the one-row curve.
  std::array<std::optional<double>, kWidths> rows_seen(const CostCurve& curve) const;
  std::optional<CostCurve> pinned_;
  size_t recorded_ = 0;
};

// Where the estimates of `model` (its file, this CPU, its threads and this build) are kept.
std::string pass_costs_path(const LoadedModel& model);
// The estimates kept for `model`, or none yet.
PassCosts kept_pass_costs(const LoadedModel& model);
// Keeps them for the next run (silently not, where the cache cannot be written).
void keep_pass_costs(const LoadedModel& model, const PassCosts& costs);

}  // namespace sw
