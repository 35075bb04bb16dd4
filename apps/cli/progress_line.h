// A progress line on stderr for a long command: per stage, done of total, the rate and the time
// left, at most every few seconds (and when a stage starts and ends), so that a run of minutes
// is never silent and a log stays short.
#pragma once

#include <chrono>
#include <string>

#include "schemaweaver/progress.h"

namespace cli {

class ProgressLine {
 public:
  // `unit` names what the stages count ("cases"), written after the count; empty: none.
  explicit ProgressLine(std::string unit = "") : unit_(std::move(unit)) {}
  void operator()(const sw::Progress& progress);
  // As a callback for the library's long jobs (the line must outlive the job).
  sw::ProgressCallback callback() {
    return [this](const sw::Progress& p) { (*this)(p); };
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string unit_;
  std::string stage_;
  Clock::time_point stage_started_;
  Clock::time_point printed_;
  size_t started_at_ = 0;  // units done when the stage was first reported
};

}  // namespace cli
