#include "engine/persist/prompt_state.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "schemaweaver/tools.h"
#include "util/files.h"

namespace sw {
namespace {

constexpr char kMagic[8] = {'S', 'W', 'P', 'R', 'O', 'M', 'P', 'T'};
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::ofstream& out, const T& value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <typename T>
void put_all(std::ofstream& out, const std::vector<T>& values) {
  put(out, uint64_t(values.size()));
  out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * sizeof(T)));
}

template <typename T>
bool get(std::ifstream& in, T& value) {
  return bool(in.read(reinterpret_cast<char*>(&value), sizeof(value)));
}

// Reads a length-prefixed array, refusing lengths beyond what the file holds.
template <typename T>
bool get_all(std::ifstream& in, uint64_t file_size, std::vector<T>& values) {
  uint64_t count = 0;
  if (!get(in, count) || count > file_size / sizeof(T)) return false;
  values.resize(size_t(count));
  return bool(in.read(reinterpret_cast<char*>(values.data()), std::streamsize(count * sizeof(T))));
}

}  // namespace

std::string model_identity(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const auto size = fs::file_size(model_path, error);
  const auto modified = fs::last_write_time(model_path, error).time_since_epoch().count();
  // The cells' layout is llama.cpp's: a state saved by another build is not restored.
  return fs::weakly_canonical(model_path, error).string() + " " + std::to_string(size) + " bytes, modified " +
         std::to_string(modified) + ", " + SW_LLAMA_VERSION;
}

void write_prompt_state(const std::string& path, const PromptState& state) {
  write_atomically(path, "the prompt state", [&](const std::string& partial) {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(kMagic, sizeof(kMagic));
    put(out, kVersion);
    put_all(out, std::vector<char>(state.model.begin(), state.model.end()));
    put_all(out, state.tokens);
    put_all(out, state.cells);
    if (!out) throw Error("cannot write the prompt state '" + path + "'");
  });
}

std::optional<PromptState> read_prompt_state(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  const uint64_t size = std::filesystem::file_size(path, error);
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kMagic)] = {};
  uint32_t version = 0;
  std::vector<char> model;
  PromptState state;
  if (!in || !in.read(magic, sizeof(magic)) || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 ||
      !get(in, version) || version != kVersion || !get_all(in, size, model) ||
      !get_all(in, size, state.tokens) || !get_all(in, size, state.cells))
    throw Error("'" + path + "' is not a prompt state file of this version (delete it to make a new one)");
  state.model.assign(model.begin(), model.end());
  return state;
}

}  // namespace sw
