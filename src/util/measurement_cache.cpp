#include "util/measurement_cache.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "util/files.h"

namespace sw {

namespace fs = std::filesystem;

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown-cpu";
}

// GCC says __SANITIZE_ADDRESS__; clang (the sanitizer build's compiler) only answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define SW_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SW_ADDRESS_SANITIZER 1
#endif
#endif

const char* build_flavor() {
#ifdef SW_ADDRESS_SANITIZER
  return "-asan";
#else
  return "";
#endif
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string measurement_path(const std::string& folder, const std::string& kind, const std::string& model_path,
                             const std::string& key, const std::string& label) {
  if (folder.empty()) return "";
  const fs::path root(folder);
  std::error_code ec;
  const std::string identity =
      fs::path(model_path).filename().string() + "|" + std::to_string(fs::file_size(model_path, ec)) + "|" + key;
  return (root / kind / (fs::path(model_path).stem().string() + label + "-" + stable_hash_hex(identity) + ".json"))
      .string();
}

std::optional<Json> read_measurement_json(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    return Json::parse(in);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void write_measurement(const std::string& path, const Json& value) {
  if (path.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  try {
    write_atomically(path, "the measurement", [&](const std::string& partial) {
      if (!(std::ofstream(partial) << value.dump(1) << "\n")) throw Error("cannot write '" + partial + "'");
    });
  } catch (const Error&) {
    // A cache only saves time: without it the measurement is made again next time.
  }
}

}  // namespace sw
