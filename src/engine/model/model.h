// The loaded model: llama.cpp handles, the vocabulary as text, the detected call format.
// Immutable after load; shared by sessions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <llama.h>

#include "engine/chat/llama_chat.h"
#include "engine/format/format.h"
#include "engine/model/streaming.h"
#include "schemaweaver/engine.h"

namespace sw {

// The one implementation of the public Model; `loaded(model)` reaches it.
class LoadedModel final : public Model {
 public:
  ModelParams params;
  llama_model* model = nullptr;
  const llama_vocab* vocab = nullptr;
  std::vector<std::string> pieces;  // token id -> its text, control tokens rendered
  // Token classes computed once, so value constraints need no grammar for most tokens:
  // plain_string[t] - the token's text can stand inside a JSON string without ending it.
  std::vector<bool> plain_string;
  // The tokenizer puts a space before the text it starts with (SentencePiece's add_space_prefix).
  bool space_prefix = false;
  std::string chat_template;
  // The chat template run by llama.cpp's Jinja engine: the GGUF's or ModelParams::chat_template
  // (null for a GGUF without one: llama.cpp's built-in rendering of its family's format is used).
  std::shared_ptr<const llama_chat::Templates> templates;
  CallFormat format;
  // The template's thinking block, where it has one (what CallOptions::thinking_budget opens).
  llama_chat::ReasoningBlock reasoning;
  int threads = 1;
  double load_ms = 0;  // the weights (with `stream`: the metadata), vocabulary tables, format
  std::unique_ptr<StreamingLoad> streaming;  // weights still arriving (ModelParams::stream)

  LoadedModel() = default;
  ~LoadedModel() override;

  int vocab_size() const { return int(pieces.size()); }
  bool is_end_of_generation(llama_token token) const { return llama_vocab_is_eog(vocab, token); }
  // Control and added tokens ("<tool_call>", "<|im_end|>") are matched whole by the tokenizer,
  // so text on either side of them never fuses with them.
  bool is_atomic(llama_token token) const {
    return llama_vocab_get_attr(vocab, token) & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED);
  }
  // Text -> tokens; control-token text (e.g. "<|im_end|>", "<tool_call>") maps to its token.
  std::vector<llama_token> tokenize(const std::string& text, bool add_bos) const;
  std::string detokenize(const std::vector<llama_token>& tokens) const;
  // llama.cpp context settings every context of this model shares: its threads, no timing
  // records, and no flash attention. On AVX-512 CPUs, llama.cpp's flash attention over Q4_K
  // weights repacked for the CPU goes wrong for passes of 4 to 63 tokens with 128-wide heads
  // (Qwen2.5-Coder-1.5B's logits turn to noise), which are the passes SchemaWeaver, jump-forward
  // and speculative decoding are made of. Without it, passes of 1-8 tokens cost the same there
  // and a 1024-token prompt about 5 % more.
  llama_context_params context_params() const;
};

// Every Model is a LoadedModel (Model::load makes them; no other class may derive from Model).
inline const LoadedModel& loaded(const Model& model) { return static_cast<const LoadedModel&>(model); }

// Once per process, before llama.cpp or ggml is used: its backends, and its log silenced but for
// warnings and errors, kept for our error messages, and all of it to set_log_callback's callback.
void init_llama_backend();
// The last of those warning and error lines.
std::string llama_last_errors();

}  // namespace sw
