// Measurements about a model file kept between runs (pass costs, sensitivities): one JSON file
// per model file and key under <folder>/<kind>/, in the folder the caller names (ModelParams::
// measurements_dir, PackOptions::measurements_dir); none is kept where it names none.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schemaweaver/error.h"

namespace sw {

// The file in `folder` for `model_path` (its name and size) and `key` (what else the measurement
// depends on); `label` is added to the file's name for people reading the folder. "" when
// `folder` is "": nothing is kept.
std::string measurement_path(const std::string& folder, const std::string& kind, const std::string& model_path,
                             const std::string& key, const std::string& label = "");
// The JSON at `path`; nullopt if there is no such file (or no path) or it does not parse.
std::optional<Json> read_measurement_json(const std::string& path);
// The measurement at `path` read as a T; nullopt if it is absent, damaged or of another shape
// (then it is measured again and replaced).
template <class T>
std::optional<T> read_measurement(const std::string& path) {
  std::optional<Json> saved = read_measurement_json(path);
  if (!saved) return std::nullopt;
  try {
    return saved->get<T>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
// What a timing depends on besides the model: the running CPU's model name and the build (a
// sanitizer build runs several times slower: "-asan", else ""). Part of a timing's key.
std::string cpu_model();
const char* build_flavor();
// The median of timings (robust to a pass slowed by another process); `values` not empty.
double median(std::vector<double> values);

// Written aside and renamed, so that a reader (another session, another process) never sees
// half a file; a cache that cannot be written is left out silently (it only saves time), and
// nothing is written for the path "".
void write_measurement(const std::string& path, const Json& value);

}  // namespace sw
