// How a decoder chooses a token among those its constraint allows: the greedy choice, or a draw
// from the model's distribution over them (CallOptions::sampling). One chooser serves all the
// decoders of a call, so that one seed gives one stream of draws.
#pragma once

#include <functional>
#include <optional>
#include <random>

#include "engine/decode/greedy.h"
#include "schemaweaver/engine.h"

namespace sw {

class Chooser {
 public:
  // Throws Error for a sampling setting out of its range (check).
  explicit Chooser(const Sampling& sampling);
  static void check(const Sampling& sampling);
  // The greedy chooser, which holds no state (shared by every thread).
  static Chooser& greedy();
  // Whether tokens are drawn (temperature > 0) rather than chosen greedily.
  bool samples() const { return sampling_.temperature > 0; }
  // The token chosen among those `allowed` accepts (-1 if none; `may_be_allowed` and `margin` as
  // for pick_greedy, the margin the greedy choice's). Drawn: from the allowed tokens, shaped by
  // top_k, min_p, top_p (both on the distribution at temperature 1) and the temperature in that
  // order (one of the orders llama.cpp's sampler chain may be given: min_p first bounds the
  // candidates by logit, so that few are checked against the constraint); without min_p, those
  // whose logit lies within kDrawnRange of the best one's (the rest weigh below e^-30 of it).
  llama_token choose(const float* logits, int n_vocab, const std::function<bool(llama_token)>& allowed,
                     const std::function<bool(llama_token)>& may_be_allowed = nullptr, float* margin = nullptr);
  // The next choice is `token`, drawn already at that place: the verifier's draw where it differed
  // from a branch's draft, which the serial decoder then writes (a second draw there would favour
  // the draft). Only while sampling; a greedy choice is the same again.
  void carry(llama_token token);

  static constexpr float kDrawnRange = 30.0f;

 private:
  llama_token draw(const float* logits, int n_vocab, const std::function<bool(llama_token)>& allowed,
                   const std::function<bool(llama_token)>& may_be_allowed, float best);

  Sampling sampling_;
  std::mt19937_64 random_;
  std::optional<llama_token> carried_;
};

}  // namespace sw
