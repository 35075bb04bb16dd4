// How the branches of a skeleton share the conversation's KV cells, measured with the pinned
// llama.cpp on a real model: the unified cache (what the engine uses) against llama.cpp's
// default of one cache slice per sequence.
//
//   kv_sharing MODEL.gguf [prompt_tokens=400] [head_tokens=12] [branch_tokens=5]
//
// Unified: seq_cp tags the prompt's cells for every branch and the skeleton (head in all
// sequences, each branch's tokens in its own) is one llama_decode. Per-sequence slices: a token
// cannot belong to sequences in different slices, so the head is decoded first, seq_cp copies
// the prompt and head into every branch's slice, then the branch tokens follow in a second
// pass; each slice also holds only context/sequences cells.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "testing.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::vector<llama_token> text_tokens(const sw::LoadedModel& m, int n) {
  std::string text;
  while (int(m.tokenize(text, false).size()) < n) text += "The quick brown fox jumps over the lazy dog. ";
  auto tokens = m.tokenize(text, false);
  tokens.resize(size_t(n));
  return tokens;
}

struct Result {
  double share_ms = 0, skeleton_ms = 0;
  int passes = 0;
};

Result run(const sw::LoadedModel& m, bool unified, int branches, int prompt, int head, int piece) {
  const int context = 4096;
  // Per-sequence slices split the context: each sequence gets a full one.
  sw::Context ctx(m, unified ? context : context * (branches + 1), unified, unified ? sw::Context::kSequences : branches + 1);
  std::vector<llama_token> tokens = text_tokens(m, prompt + head + piece);
  sw::PassCounter counter;
  ctx.append({tokens.begin(), tokens.begin() + prompt}, counter);
  counter = {};
  Result r;
  std::vector<llama_seq_id> all{0};
  for (int b = 1; b <= branches; ++b) all.push_back(b);
  std::vector<sw::BatchToken> head_batch, branch_batch;
  for (int i = 0; i < head; ++i)
    head_batch.push_back({tokens[size_t(prompt + i)], prompt + i, unified ? all : std::vector<llama_seq_id>{0}, false});
  for (int b = 1; b <= branches; ++b)
    for (int i = 0; i < piece; ++i)
      branch_batch.push_back({tokens[size_t(prompt + head + i)], prompt + head + i, {b}, i + 1 == piece});
  auto t0 = Clock::now();
  if (unified) {
    for (int b = 1; b <= branches; ++b) ctx.share_main(b);
    r.share_ms = ms_since(t0);
    auto t1 = Clock::now();
    head_batch.insert(head_batch.end(), branch_batch.begin(), branch_batch.end());
    ctx.decode(head_batch, counter);
    r.skeleton_ms = ms_since(t1);
  } else {
    ctx.decode(head_batch, counter);
    auto t1 = Clock::now();
    for (int b = 1; b <= branches; ++b) ctx.share_main(b);
    r.share_ms = ms_since(t1);
    ctx.decode(branch_batch, counter);
    r.skeleton_ms = ms_since(t0);
  }
  r.passes = counter.passes;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kv_sharing MODEL.gguf [prompt_tokens] [head_tokens] [branch_tokens]\n");
    return 1;
  }
  try {
    auto model = sw::Model::load({argv[1]});
    int prompt = argc > 2 ? std::stoi(argv[2]) : 400;
    int head = argc > 3 ? std::stoi(argv[3]) : 12;
    int piece = argc > 4 ? std::stoi(argv[4]) : 5;
    std::printf("model %s, prompt %d tokens, head %d, %d per branch; times in ms (median of 5)\n",
                model->info().name.c_str(), prompt, head, piece);
    std::printf("| branches | unified: seq_cp | unified: skeleton (passes) | per-sequence: seq_cp | per-sequence: skeleton (passes) |\n|---|---|---|---|---|\n");
    for (int branches : {1, 2, 4, 8}) {
      Result best[2];
      for (int unified = 1; unified >= 0; --unified) {
        std::vector<Result> runs;
        for (int rep = 0; rep < 5; ++rep) runs.push_back(run(loaded(*model), unified, branches, prompt, head, piece));
        std::sort(runs.begin(), runs.end(), [](const Result& a, const Result& b) { return a.skeleton_ms < b.skeleton_ms; });
        best[unified] = runs[2];
      }
      std::printf("| %d | %.3f | %.1f (%d) | %.3f | %.1f (%d) |\n", branches, best[1].share_ms, best[1].skeleton_ms,
                  best[1].passes, best[0].share_ms, best[0].skeleton_ms, best[0].passes);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
