// Tool-set prefixes kept on disk: the KV cells of a prompt's beginning (the system message that
// lists the tools), one file per prefix, so that a restarted server or a new process answers a
// known tool set without computing its prompt again. Bounded in bytes, least recently used first
// out. Thread safety: files are written aside and renamed, so sessions of one process or several
// processes can share a folder; an entry removed by another one is just a miss.
#pragma once

#include <llama.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/persist/prompt_state.h"

namespace sw {

class PromptCache {
 public:
  // Creates `dir` if needed; throws Error if it cannot. A max_bytes of 0 keeps nothing.
  PromptCache(std::string dir, uint64_t max_bytes);

  // The state saved for exactly these prefix tokens computed by `model` (model_identity), and
  // marks it used; nullopt if there is none. A damaged or foreign file is a miss and removed.
  std::optional<PromptState> find(const std::string& model, const std::vector<llama_token>& prefix) const;
  // Saves the state, then removes the least recently used files until the folder holds at most
  // max_bytes. A cache that cannot be written is left out silently: it only saves time.
  void store(const PromptState& state) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string path_for(const std::string& model, const std::vector<llama_token>& prefix) const;
  void evict() const;

  std::string dir_;
  uint64_t max_bytes_;
};

}  // namespace sw
