#include "engine/decode/greedy.h"

#include <algorithm>
#include <numeric>

namespace sw {

llama_token pick_greedy(const float* logits, int n_vocab, const std::function<bool(llama_token)>& allowed,
                        const std::function<bool(llama_token)>& may_be_allowed, float* margin) {
  // The vocabulary's indices, sorted in part: one buffer per thread for every pick, since a
  // fresh one (a megabyte for a large vocabulary) costs page faults that a SchemaWeaver call,
  // which picks through several short-lived decoders, would pay each time.
  thread_local std::vector<llama_token> order;
  order.resize(static_cast<size_t>(n_vocab));
  std::iota(order.begin(), order.end(), 0);
  auto better = [&](llama_token a, llama_token b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  // The lead of order[chosen] over the next allowed token of the sorted order[chosen + 1, end);
  // tokens after `end`, if `more` may be allowed, have no higher logit than order[end - 1].
  auto lead = [&](size_t chosen, size_t end, bool more) {
    for (size_t i = chosen + 1; i < end; ++i) {
      if (allowed(order[i])) return logits[order[chosen]] - logits[order[i]];
    }
    return more ? logits[order[chosen]] - logits[order[end - 1]] : kNoRival;
  };
  size_t top = std::min<size_t>(16, order.size());
  std::partial_sort(order.begin(), order.begin() + long(top), order.end(), better);
  for (size_t i = 0; i < top; ++i) {
    if (!allowed(order[i])) continue;
    if (margin) *margin = lead(i, top, top < order.size());
    return order[i];
  }
  auto rest_end = order.end();
  if (may_be_allowed) rest_end = std::partition(order.begin() + long(top), order.end(), may_be_allowed);
  std::sort(order.begin() + long(top), rest_end, better);
  for (auto it = order.begin() + long(top); it != rest_end; ++it) {
    if (!allowed(*it)) continue;
    size_t chosen = size_t(it - order.begin());
    if (margin) *margin = lead(chosen, size_t(rest_end - order.begin()), false);
    return *it;
  }
  return -1;
}

}  // namespace sw
