// A bounded window of the last values seen: what the learnt estimates (pass costs, a session's
// value lengths) take their medians and averages over.
#pragma once

#include <cstddef>
#include <deque>
#include <utility>

namespace sw {

// Adds `value` to `window`, dropping the oldest beyond `size`.
template <typename T>
void remember(std::deque<T>& window, T value, size_t size) {
  window.push_back(std::move(value));
  if (window.size() > size) window.pop_front();
}

}  // namespace sw
