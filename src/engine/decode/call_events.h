// When the calls of an answer become executable: the final events of the serial modes, and the
// time at which the last call of a turn could run.
#pragma once

#include <string>
#include <vector>

#include "engine/decode/decoder.h"
#include "engine/format/format.h"
#include "schemaweaver/engine.h"

namespace sw {

// The final call events of the serial modes (SchemaWeaver emits its own): under a grammar a
// call fits its schema once its JSON object closes, so it is announced then; free output only
// when the whole answer has parsed and passed the schema check.
class SerialCallEvents {
 public:
  SerialCallEvents(const CallOptions& options, std::vector<CallEvent>& events) : options_(options), events_(events) {}

  // A JSON object closed in the text: a call where the format writes calls as JSON objects (the
  // answer of `tools`' one schema where calls are not named).
  void closed(const std::string& object, const CallFormat& format, const std::vector<ToolSpec>& tools, double at_ms);
  // The calls of a valid answer that no event announced yet.
  void rest(const std::vector<ToolCall>& calls, double at_ms);

 private:
  size_t finals() const;
  void announce(ToolCall call, double at_ms);

  const CallOptions& options_;
  std::vector<CallEvent>& events_;
};

// When the last call of the turn could be executed: the latest time at which some call became
// executable, by its final or kept provisional event, or else by its closing in the text
// (`fallback` where neither says).
double executable_ms(const CallTracker& tracker, const std::vector<CallEvent>& events, double fallback);

}  // namespace sw
