// Calls told as their text is decided (CallOptions::on_call_delta): each call's tool name once
// its head is written, then its arguments in pieces that, joined, are dump_json of the final
// call's arguments - each piece what the decided text newly fixes of that final text.
#pragma once

#include <functional>
#include <string>

#include "engine/format/format.h"
#include "schemaweaver/engine.h"

namespace sw {

// The longest prefix of dump_json(v) that `text` fixes for every JSON value v whose text begins
// with `text` (a JSON object's text in part: a value still being written - a number, a
// literal, a key - is left out, a string's value is cut after its last whole character and
// escape). Sets `end` to one past the object's end once it is whole (else npos).
std::string fixed_dump_prefix(const std::string& text, size_t& end);

class CallDeltas {
 public:
  // Whether a format's calls can be told so: named calls whose arguments are one JSON object.
  // (Tagged or keyword arguments and Gemma 4's notation are told whole, by the final event.)
  static bool streams(const CallFormat& format);

  CallDeltas(const CallFormat& format, std::function<void(const CallDelta&)> tell)
      : format_(format), tell_(std::move(tell)) {}
  // More of the answer's decided text.
  void feed(const std::string& more);

 private:
  // Finds the next call's head after `scan_`; false if it is not all written yet.
  bool find_head();

  const CallFormat& format_;
  std::function<void(const CallDelta&)> tell_;
  std::string text_;                         // the answer's decided text
  size_t scan_ = 0;                          // where the next call's head is looked for
  size_t arguments_at_ = std::string::npos;  // where the current call's arguments begin
  int index_ = -1;                           // the current call's
  std::string told_;                         // of the current call's arguments
};

}  // namespace sw
