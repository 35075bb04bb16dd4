// The choice between a tool call and a reply in text (OpenAI's tool_choice "auto").
//
// Left free, models begin a call in more forms than their own format: the format's tag
// ("<tool_call>"), bare JSON whose first key "name" begins a known tool's name
// ('{"name": "get_w', '[{"name": "get_w', and with its brace doubled, '{{"name": "get_w', as
// Qwen2.5's template prints its example call), a python-like call of a known tool ("get_weather(",
// "[get_weather("), a known tool's name and then its JSON arguments ("get_weather {", or on the
// next line), and a fenced code block of JSON ("```json\n{", "```\n[") or of the other
// forms ("```tool_code\nget_weather("). Every format recognises all of them: each is a call
// written explicitly, so a reply in text does not begin that way, while a call in a form the
// format does not use is still the call the model means. Bare JSON that names no known tool is
// text (Qwen2.5-Coder-0.5B answers a joke as {"name": "Joke", ...}); fenced JSON is a call
// whatever its name (the same model fences calls whose name holds a value). The answer is decoded freely
// while its beginning could still become one of these forms; once it is one, the caller
// throws that beginning away and decodes the call under the call grammar of its mode - in the
// form the model opened: JSON it began bare or in a fence is written so (json_opening), for a
// model goes on differently in each (Qwen2.5-Coder-1.5B closes a fenced call and ends its turn,
// where in its template's <tool_call> blocks the same call is followed by call after call).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/decode/decoder.h"
#include "engine/format/format.h"

namespace sw {

enum class Opening {
  Undecided,  // the text so far may still begin a call
  Call,       // it begins a call
  Text,       // it cannot begin a call
};

// Classifies the beginning of a free answer (leading whitespace aside).
Opening classify_opening(const std::string& text, const CallFormat& format, const std::vector<ToolSpec>& tools);

// How an opening that is a call writes it as JSON outside the format's markers: the text before
// its JSON ("```json\n" for a fenced block, "" for bare JSON) and whether the JSON is a list.
struct JsonOpening {
  std::string fence;
  bool list = false;
};
// The JSON form of a call's opening (classify_opening: Call); nullopt where the call opens with
// the format's marker, a tool's name or doubled braces, or where the format's calls are not JSON
// objects: the format's own form writes those.
std::optional<JsonOpening> json_opening(const std::string& text, const CallFormat& format,
                                        const std::vector<ToolSpec>& tools);

// The opening `text` grown by `token` (its text appended), classified. A control token that would
// make it text leaves it as it was: a turn marker is not a reply's beginning (Qwen2.5-Coder, after
// tool results, writes <|im_start|> before the JSON of its call).
Opening grow_opening(std::string& text, llama_token token, const LoadedModel& model, const std::vector<ToolSpec>& tools);

// Free decoding that stops, without taking the token, where the answer becomes the beginning
// of a call, and otherwise goes on as free decoding - or, with `stops_at_text` (a reply that
// will be decoded otherwise), stops there too. Openings that stay undecided for kMaxTokens
// tokens are text.
class OpeningProbe : public Strategy {
 public:
  static constexpr int kMaxTokens = 16;
  OpeningProbe(const LoadedModel& model, const std::vector<ToolSpec>& tools, Chooser& chooser,
               bool stops_at_text = false);
  Step next(const float* logits) override;
  bool found_call() const { return state_ == Opening::Call; }
  bool decided_text() const { return state_ == Opening::Text; }
  // The answer's text up to where it opened a call (or was decided), turn markers left out.
  const std::string& text() const { return text_; }
  // The smallest margin among the choices that decided the opening.
  float margin() const { return margin_; }

 private:
  const LoadedModel& model_;
  const std::vector<ToolSpec>& tools_;
  std::unique_ptr<Strategy> free_;
  std::string text_;
  int tokens_ = 0;
  Opening state_ = Opening::Undecided;
  const bool stops_at_text_;
  float margin_ = kNoRival;
};

// A reply in text whose beginning opens no call: free decoding where, while the opening is
// undecided, a token that would make it one of the forms above is passed over for the best one
// that does not (CallOptions::answer_instead_of_repeating, where the model's call would repeat
// one already answered). Once the opening is text, or after kMaxTokens, it is free decoding.
class TextOpening : public Strategy {
 public:
  TextOpening(const LoadedModel& model, const std::vector<ToolSpec>& tools, Chooser& chooser);
  Step next(const float* logits) override;

 private:
  const LoadedModel& model_;
  const std::vector<ToolSpec>& tools_;
  Chooser& chooser_;
  std::unique_ptr<Strategy> free_;
  std::string text_;
  int tokens_ = 0;
  bool decided_ = false;
};

}  // namespace sw
