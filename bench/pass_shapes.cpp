// Whether a token's logits depend on how the passes that computed the context were shaped,
// measured with the pinned llama.cpp on a real model: a text read token by token (what a
// serial decoder does), in passes of 4, in one pass, and in passes of 4 that share each pass
// with the tokens of a second sequence (how SchemaWeaver's branches lie in the cache: cells of
// two sequences interleaved). Each is compared with token by token, bit for bit.
//
//   pass_shapes MODEL.gguf [--no-repack]
//
// Lossless modes (constrained, jump-forward, speculative, verified SchemaWeaver) make the same
// choices on the same logits; where the logits differ by rounding, a near-tie can go either
// way. README, "Why lossless modes differ", gives the figures and what makes the kernels exact.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "testing.h"

namespace {

constexpr int kRead = 24;  // tokens whose logits are compared, after the rest of the text

using Logits = std::vector<std::vector<float>>;

std::vector<llama_token> sample_text(const sw::LoadedModel& m) {
  std::string text;
  while (m.tokenize(text, false).size() < 160)
    text += "The weather in Paris is mild today; tomorrow it rains in Lyon and the wind turns north. ";
  return m.tokenize(text, false);
}

// Reads `tokens` after the prompt in passes of `size` tokens (0: all in one), keeping every
// token's logits; `interleaved` adds as many tokens of a second sequence to every pass.
Logits read(const sw::LoadedModel& m, const std::vector<llama_token>& tokens, size_t size, bool interleaved) {
  sw::Context context(m, 1024, true, 2);
  sw::PassCounter passes;
  const size_t prompt = tokens.size() - kRead;
  context.append({tokens.begin(), tokens.begin() + long(prompt)}, passes);
  context.share_main(1);
  Logits out;
  for (size_t at = prompt; at < tokens.size();) {
    const size_t n = std::min(size == 0 ? tokens.size() : size, tokens.size() - at);
    std::vector<sw::BatchToken> batch;
    for (size_t i = 0; i < n; ++i) {
      batch.push_back({tokens[at + i], llama_pos(at + i), {sw::Context::kMain}, true});
      // The other sequence's token at the same position, as a branch's would be.
      if (interleaved) batch.push_back({tokens[at + i], llama_pos(at + i), {1}, false});
    }
    context.decode(batch, passes);
    for (size_t i = 0; i < n; ++i) {
      const float* logits = context.logits_at(int(interleaved ? 2 * i : i));
      out.emplace_back(logits, logits + m.vocab_size());
    }
    at += n;
  }
  return out;
}

void compare(const char* name, const Logits& serial, const Logits& other) {
  int same = 0;
  double largest = 0;
  for (size_t i = 0; i < serial.size(); ++i) {
    same += std::memcmp(serial[i].data(), other[i].data(), serial[i].size() * sizeof(float)) == 0;
    for (size_t j = 0; j < serial[i].size(); ++j)
      largest = std::max(largest, double(std::fabs(serial[i][j] - other[i][j])));
  }
  std::printf("| %s | %d/%zu | %.6f |\n", name, same, serial.size(), largest);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: pass_shapes MODEL.gguf [--no-repack]\n");
    return 2;
  }
  try {
    sw::ModelParams params{argv[1]};
    params.repack = !(argc > 2 && std::string(argv[2]) == "--no-repack");
    auto model = sw::Model::load(params);
    const sw::LoadedModel& m = sw::loaded(*model);
    const std::vector<llama_token> tokens = sample_text(m);
    std::printf("%s, weights %s; %s\n\n", model->info().name.c_str(), params.repack ? "repacked" : "as stored",
                model->info().system_info.find("LLAMAFILE = 1") != std::string::npos
                    ? "llamafile's tiled kernels in (passes of 2+ tokens)"
                    : "llamafile's tiled kernels compiled out");
    std::printf("| %d tokens read | logits bit-identical to token by token | largest difference |\n|---|---|---|\n",
                kRead);
    const Logits serial = read(m, tokens, 1, false);
    compare("in passes of 4", serial, read(m, tokens, 4, false));
    compare("in one pass", serial, read(m, tokens, 0, false));
    compare("token by token, a second sequence's cells between", serial, read(m, tokens, 1, true));
    compare("in passes of 4, a second sequence's cells between", serial, read(m, tokens, 4, true));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pass_shapes: %s\n", e.what());
    return 1;
  }
}
