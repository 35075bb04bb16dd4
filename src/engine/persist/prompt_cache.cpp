#include "engine/persist/prompt_cache.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "schemaweaver/error.h"
#include "util/files.h"

namespace sw {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExtension = ".swprompt";

}  // namespace

PromptCache::PromptCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error || !fs::is_directory(dir_, error))
    throw Error("cannot use '" + dir_ + "' as the prompt cache folder" + (error ? ": " + error.message() : ""));
}

std::string PromptCache::path_for(const std::string& model, const std::vector<llama_token>& prefix) const {
  uint64_t hash = stable_hash(model.data(), model.size());
  hash = stable_hash(prefix.data(), prefix.size() * sizeof(llama_token), hash);
  char name[32];
  std::snprintf(name, sizeof(name), "%016" PRIx64, hash);
  return (fs::path(dir_) / (std::string(name) + kExtension)).string();
}

std::optional<PromptState> PromptCache::find(const std::string& model, const std::vector<llama_token>& prefix) const {
  const std::string path = path_for(model, prefix);
  std::optional<PromptState> state;
  try {
    state = read_prompt_state(path);
  } catch (const Error&) {
    std::error_code ignored;
    fs::remove(path, ignored);
    return std::nullopt;
  }
  // The name is a hash: the file must hold exactly this prefix of this model.
  if (!state || state->model != model || state->tokens != prefix) return std::nullopt;
  std::error_code ignored;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ignored);  // used now: last out
  return state;
}

void PromptCache::store(const PromptState& state) const {
  if (max_bytes_ == 0) return;
  try {
    write_prompt_state(path_for(state.model, state.tokens), state);
  } catch (const Error&) {
    return;
  }
  evict();
}

void PromptCache::evict() const {
  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, error)) {
    if (e.path().extension() != kExtension) continue;
    std::error_code gone;  // another process may remove it meanwhile
    Entry entry{e.path(), e.file_size(gone), e.last_write_time(gone)};
    if (gone) continue;
    total += entry.bytes;
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    std::error_code ignored;
    fs::remove(e.path, ignored);
    total -= e.bytes;
  }
}

}  // namespace sw
