// The greedy choice among the tokens a constraint allows, which every decoder here makes (the
// serial loop's strategies, SchemaWeaver's branches and verifier, the drafters).
#pragma once

#include <functional>
#include <limits>
#include <vector>

#include "llama.h"

namespace sw {

// The margin of a choice where nothing else was allowed.
constexpr float kNoRival = std::numeric_limits<float>::infinity();

// The best token by logit among those `allowed` accepts; -1 if it accepts none. Only the top
// candidates are sorted unless all of them are rejected, which gives the same choice as masking
// the whole vocabulary first, at a fraction of the cost. Then `may_be_allowed`, a cheap
// necessary condition (such as the first byte), removes most of the vocabulary before the rest
// is sorted and checked. With a `margin`, it receives how far the choice's logit leads the next
// allowed token's (kNoRival if none is allowed); when that token lies beyond the sorted top, the
// gap to the top's last logit, which bounds it from below.
llama_token pick_greedy(const float* logits, int n_vocab, const std::function<bool(llama_token)>& allowed,
                        const std::function<bool(llama_token)>& may_be_allowed = nullptr,
                        float* margin = nullptr);

}  // namespace sw
