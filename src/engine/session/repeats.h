// Calls a model makes again after the conversation answered them: counted in every answer, and
// under CallOptions::answer_instead_of_repeating replaced by a reply in text. Small models that
// are handed a tool's result often call the same tool with the same arguments again, turn after
// turn, so an agent loop never reaches its answer.
#pragma once

#include <functional>
#include <vector>

#include "schemaweaver/engine.h"

namespace sw {

// How many of `calls` the conversation already made and got a result for: an assistant's call
// with the same tool and arguments, followed later by a tool message.
int repeated_calls(const std::vector<Message>& conversation, const std::vector<ToolCall>& calls);

// The caller's call callbacks held back until the answer's calls are known to stand: the options
// to decode with tell a record, and `release` tells the caller's callbacks what it holds, in order.
class HeldCalls {
 public:
  // `options` with its on_call and on_call_delta recorded here (it must outlive the options).
  CallOptions holding(const CallOptions& options);
  void release(const CallOptions& options) const;

 private:
  std::vector<std::function<void(const CallOptions&)>> told_;
};

}  // namespace sw
