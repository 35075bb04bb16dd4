// How far a long job has come: pack, shape and quality report each stage's units of work as they
// finish (timing a weight type, reading a calibration window, weighing a matrix, ...), so that a
// caller can show a progress line. The library itself prints nothing.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace sw {

struct Progress {
  std::string stage;  // what is being done ("timing weight types", "calibration", ...)
  size_t done = 0;    // units of the stage finished
  size_t total = 0;   // units of the stage
};

// Called on the caller's thread after each unit; an empty function reports nothing.
using ProgressCallback = std::function<void(const Progress&)>;

// Reports `done` of `total` units of `stage` to `progress`, if set.
inline void report(const ProgressCallback& progress, const std::string& stage, size_t done, size_t total) {
  if (progress) progress({stage, done, total});
}

}  // namespace sw
