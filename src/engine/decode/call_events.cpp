#include "engine/decode/call_events.h"

#include <algorithm>

namespace sw {

void SerialCallEvents::closed(const std::string& object, const CallFormat& format, const std::vector<ToolSpec>& tools,
                              double at_ms) {
  if (!format.json_call) return;
  const Json value = Json::parse(object, nullptr, false);
  if (!format.named) {
    if (value.is_object() && tools.size() == 1) announce({tools.front().name, value}, at_ms);
    return;
  }
  const std::string& name = format.name_field;
  const std::string& arguments = format.args_field;
  if (!value.is_object() || !value.contains(name) || !value[name].is_string() || !value.contains(arguments) ||
      !value[arguments].is_object())
    return;
  announce({value[name].get<std::string>(), value[arguments]}, at_ms);
}

void SerialCallEvents::rest(const std::vector<ToolCall>& calls, double at_ms) {
  for (size_t i = finals(); i < calls.size(); ++i) announce(calls[i], at_ms);
}

size_t SerialCallEvents::finals() const {
  return size_t(std::count_if(events_.begin(), events_.end(),
                              [](const CallEvent& e) { return e.kind == CallEvent::Kind::Final; }));
}

void SerialCallEvents::announce(ToolCall call, double at_ms) {
  CallEvent event;
  event.index = int(finals());
  event.call = std::move(call);
  event.at_ms = at_ms;
  events_.push_back(std::move(event));
  if (options_.on_call) options_.on_call(events_.back());
}

double executable_ms(const CallTracker& tracker, const std::vector<CallEvent>& events, double fallback) {
  std::vector<double> ready = tracker.closed_ms();
  for (const CallEvent& e : events) {
    if (e.index >= int(ready.size())) ready.resize(size_t(e.index) + 1, fallback);
    ready[size_t(e.index)] = std::min(ready[size_t(e.index)], e.at_ms);
  }
  return ready.empty() ? fallback : *std::max_element(ready.begin(), ready.end());
}

}  // namespace sw
