#include "progress_line.h"

#include <cstdio>

namespace cli {

namespace {
constexpr double kSecondsBetweenLines = 5;
}

void ProgressLine::operator()(const sw::Progress& progress) {
  const Clock::time_point now = Clock::now();
  const bool new_stage = progress.stage != stage_;
  if (new_stage) {
    stage_ = progress.stage;
    stage_started_ = now;
    started_at_ = progress.done;
  }
  const bool finished = progress.done >= progress.total;
  const double since_print = std::chrono::duration<double>(now - printed_).count();
  if (!new_stage && !finished && since_print < kSecondsBetweenLines) return;
  printed_ = now;
  const double elapsed = std::chrono::duration<double>(now - stage_started_).count();
  const size_t done_here = progress.done - started_at_;
  std::string line = "  " + stage_ + ": " + std::to_string(progress.done) + " of " + std::to_string(progress.total) +
                     (unit_.empty() ? "" : " " + unit_);
  char timing[96] = "";
  if (done_here > 0 && elapsed > 0) {
    const double rate = double(done_here) / elapsed;
    const double left = double(progress.total - progress.done) / rate;
    std::snprintf(timing, sizeof timing, ", %.2f/s, %.0f s elapsed, about %.0f s left", rate, elapsed, left);
  }
  std::fprintf(stderr, "%s%s\n", line.c_str(), timing);
}

}  // namespace cli
