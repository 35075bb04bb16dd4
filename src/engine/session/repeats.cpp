#include "engine/session/repeats.h"

#include <algorithm>

namespace sw {

int repeated_calls(const std::vector<Message>& conversation, const std::vector<ToolCall>& calls) {
  std::vector<ToolCall> answered;
  for (size_t i = 0; i < conversation.size(); ++i) {
    const Message& m = conversation[i];
    if (m.role != "assistant" || m.tool_calls.empty()) continue;
    const bool has_result = std::any_of(conversation.begin() + long(i) + 1, conversation.end(),
                                        [](const Message& later) { return later.role == "tool"; });
    if (has_result) answered.insert(answered.end(), m.tool_calls.begin(), m.tool_calls.end());
  }
  return int(std::count_if(calls.begin(), calls.end(), [&](const ToolCall& call) {
    return std::find(answered.begin(), answered.end(), call) != answered.end();
  }));
}

CallOptions HeldCalls::holding(const CallOptions& options) {
  CallOptions held = options;
  if (options.on_call)
    held.on_call = [this](const CallEvent& e) { told_.push_back([e](const CallOptions& o) { o.on_call(e); }); };
  if (options.on_call_delta)
    held.on_call_delta = [this](const CallDelta& d) {
      told_.push_back([d](const CallOptions& o) { o.on_call_delta(d); });
    };
  return held;
}

void HeldCalls::release(const CallOptions& options) const {
  for (const auto& tell : told_) tell(options);
}

}  // namespace sw
