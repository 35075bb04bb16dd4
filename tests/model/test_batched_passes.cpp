// Passes of several tokens must read them as single-token passes do: SchemaWeaver's skeletons
// and branches, jump-forward and speculative decoding all stand on that. Checked on every
// installed model, since llama.cpp's kernels differ by weight type and head size: on AVX-512
// CPUs its flash attention beside repacked Q4_K weights turned Qwen2.5-Coder-1.5B's logits to
// noise for passes of 4 to 63 tokens while single tokens stayed right.
#include <gtest/gtest.h>

#include <filesystem>

#include "schemaweaver/engine.h"
#include "testing.h"

namespace {

// The next-token log-probabilities after `tokens` appended in passes of `pass_size` tokens.
std::vector<double> next_token(const sw::LoadedModel& m, const std::vector<llama_token>& tokens, size_t pass_size) {
  sw::Context context(m, 256);
  sw::PassCounter counter;
  for (size_t at = 0; at < tokens.size(); at += pass_size) {
    size_t end = std::min(tokens.size(), at + pass_size);
    context.append({tokens.begin() + long(at), tokens.begin() + long(end)}, counter);
  }
  std::vector<double> log_p;
  sw::log_softmax(context.last_logits(), size_t(m.vocab_size()), log_p);
  return log_p;
}

TEST(BatchedPasses, ReadTokensAsSinglePassesDo) {
  int checked = 0;
  // Only the default model is always installed; scripts/setup.sh --models all adds the others.
  for (const auto& file : std::filesystem::directory_iterator(SW_TEST_MODEL_DIR)) {
    if (file.path().extension() != ".gguf") continue;
    std::string name = file.path().filename().string();
    auto model = sw::Model::load({file.path().string()});
    const sw::LoadedModel& m = loaded(*model);
    auto tokens = m.tokenize(
        "Everyone is permitted to copy and distribute verbatim copies of this license document, "
        "but changing it is not allowed. The licenses for most software are designed to take away "
        "your freedom to share and change it.",
        true);
    ASSERT_GE(tokens.size(), 36u);
    auto single = next_token(m, tokens, 1);
    for (size_t step : {4, 12, 36}) {
      // Rounding differs between kernels (a few thousandths of a nat); noise is nats.
      EXPECT_LT(sw::kl_divergence(single, next_token(m, tokens, step)), 0.05)
          << name << ", passes of " << step << " tokens";
    }
    ++checked;
  }
  EXPECT_GE(checked, 1) << "the default model must be installed";
}

}  // namespace
