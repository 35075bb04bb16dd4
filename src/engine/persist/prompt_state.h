// A saved prompt state: the tokens of a prompt and llama.cpp's state of their cells (keys and
// values), tagged with the model file they were computed by. An app that starts on demand with
// the same system prompt and tools restores it instead of computing it again.
#pragma once

#include <llama.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sw {

struct PromptState {
  std::string model;  // model_identity() of the model that computed it
  std::vector<llama_token> tokens;
  std::vector<uint8_t> cells;  // llama_state_seq_get_data of the tokens' sequence
};

// The model file as it is now (path, size, modification time): a state computed by another
// file, or by this path rewritten, must not be restored.
std::string model_identity(const std::string& model_path);

// Writes the file whole (through a temporary file renamed at the end) or throws Error.
void write_prompt_state(const std::string& path, const PromptState& state);
// nullopt if there is no such file; throws Error if it is not a prompt state file.
std::optional<PromptState> read_prompt_state(const std::string& path);

}  // namespace sw
