#include "util/files.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "schemaweaver/error.h"

namespace sw {

void write_atomically(const std::string& path, const std::string& what,
                      const std::function<void(const std::string& partial)>& write) {
  namespace fs = std::filesystem;
  // A name of this writer's own: processes sharing a folder may write the same file at once.
  const std::string partial = path + ".partial-" + std::to_string(::getpid()) + "-" +
                              std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  std::error_code error;
  try {
    write(partial);
  } catch (...) {
    fs::remove(partial, error);
    throw;
  }
  fs::rename(partial, path, error);
  if (error) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    throw Error("cannot write " + what + " '" + path + "': " + error.message());
  }
}

uint64_t stable_hash(const void* data, size_t size, uint64_t hash) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
  return hash;
}

std::string stable_hash_hex(const std::string& text) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, stable_hash(text.data(), text.size()));
  return hex;
}

}  // namespace sw
