#include "engine/decode/opening.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "engine/model/model.h"

namespace sw {
namespace {

// How far a text matches a form: not at all, up to its end (the form may still follow), or
// the whole form.
enum class Fit { No, Partial, Whole };

Fit better(Fit a, Fit b) { return std::max(a, b); }

struct Cursor {
  std::string_view text;
  size_t at = 0;
  bool at_end() const { return at == text.size(); }
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

void skip_space(Cursor& c) {
  while (!c.at_end() && is_space(c.text[c.at])) ++c.at;
}

// `literal` at the cursor, which moves past what matched.
Fit literal(Cursor& c, std::string_view literal) {
  size_t n = std::min(literal.size(), c.text.size() - c.at);
  if (c.text.substr(c.at, n) != literal.substr(0, n)) return Fit::No;
  c.at += n;
  return n == literal.size() ? Fit::Whole : Fit::Partial;
}

// A list of calls may open the answer: "[" and whitespace are skipped if they are there.
void skip_list_start(Cursor& c) {
  if (!c.at_end() && c.text[c.at] == '[') {
    ++c.at;
    skip_space(c);
  }
}

// A JSON string that begins one of the tools' names: {"name": "get_w is a call of get_weather,
// {"name": "Joke" is not (small models answer a question in that shape).
Fit tool_name_string(Cursor c, const std::vector<ToolSpec>& tools) {
  Fit quote = literal(c, "\"");
  if (quote != Fit::Whole) return quote;
  if (c.at_end()) return Fit::Partial;
  size_t end = c.text.find('"', c.at);
  std::string_view name = c.text.substr(c.at, end == std::string_view::npos ? std::string_view::npos : end - c.at);
  for (const ToolSpec& tool : tools) {
    bool fits = end == std::string_view::npos ? std::string_view(tool.name).substr(0, name.size()) == name
                                               : tool.name == name;
    if (fits) return Fit::Whole;
  }
  return Fit::No;
}

// {"name": "get_w (with the format's key of the name), its brace doubled or not: templates whose
// instructions are format strings print the example call as {{"name": ...}}, and models copy it.
Fit json_call(Cursor c, const CallFormat& format, const std::vector<ToolSpec>& tools) {
  skip_list_start(c);
  Fit brace = literal(c, "{");
  if (brace != Fit::Whole) return brace;
  if (!c.at_end() && c.text[c.at] == '{') ++c.at;
  skip_space(c);
  const std::string key = "\"" + format.name_field + "\"";
  for (std::string_view part : {std::string_view(key), std::string_view(":")}) {
    Fit fit = literal(c, part);
    if (fit != Fit::Whole) return fit;
    skip_space(c);
  }
  return tool_name_string(c, tools);
}

// After a tool's whole name, its arguments: "(" at once (python-like), or a JSON object, from
// the next line or after a space (get_weather {"city": ...}, as families that write a call's
// name outside its JSON do).
Fit arguments_after_name(Cursor c) {
  if (c.at_end()) return Fit::Partial;
  if (c.text[c.at] == '(') return Fit::Whole;
  const size_t name_end = c.at;
  skip_space(c);
  if (c.at == name_end) return Fit::No;
  if (c.at_end()) return Fit::Partial;
  return c.text[c.at] == '{' ? Fit::Whole : Fit::No;
}

// get_weather( or get_weather {
Fit named_call(Cursor c, const std::vector<ToolSpec>& tools) {
  skip_list_start(c);
  Fit best = Fit::No;
  for (const ToolSpec& tool : tools) {
    Cursor d = c;
    Fit name = literal(d, tool.name);
    best = better(best, name == Fit::Whole ? arguments_after_name(d) : name);
  }
  return best;
}

// The format's marker of a call: <tool_call>, [TOOL_CALLS], ...
Fit tagged_call(Cursor c, const CallFormat& format) {
  return format.call_marker().empty() ? Fit::No : literal(c, format.call_marker());
}

// <function=get_w: where calls name their tool outside JSON, the marker before a tool's name and
// the name begun (some models leave out the marker of the turn's calls: llama.cpp reads them).
Fit marked_name(Cursor c, const CallFormat& format, const std::vector<ToolSpec>& tools) {
  if (format.json_call || format.name_prefix.empty()) return Fit::No;
  Fit prefix = literal(c, format.name_prefix);
  if (prefix != Fit::Whole) return prefix;
  if (c.at_end()) return Fit::Partial;
  const std::string_view begun = c.text.substr(c.at);
  for (const ToolSpec& tool : tools) {
    const size_t n = std::min(begun.size(), tool.name.size());
    if (begun.compare(0, n, std::string_view(tool.name).substr(0, n)) == 0) return Fit::Whole;
  }
  return Fit::No;
}

// ```lang and the whitespace after it: the cursor moves past them.
Fit fence_line(Cursor& c) {
  Fit fence = literal(c, "```");
  if (fence != Fit::Whole) return fence;
  while (!c.at_end() && (std::isalnum(static_cast<unsigned char>(c.text[c.at])) || c.text[c.at] == '_' ||
                         c.text[c.at] == '-'))
    ++c.at;
  if (c.at_end()) return Fit::Partial;
  if (!is_space(c.text[c.at])) return Fit::No;
  skip_space(c);
  return c.at_end() ? Fit::Partial : Fit::Whole;
}

// ```lang\n and then JSON, the format's tag or a python-like call.
Fit fenced_call(Cursor c, const CallFormat& format, const std::vector<ToolSpec>& tools) {
  Fit line = fence_line(c);
  if (line != Fit::Whole) return line;
  // JSON in a fence is a call whatever its name says: the models here fence the calls they mean
  // and sometimes put a value where the tool's name belongs.
  if (c.text[c.at] == '{' || c.text[c.at] == '[') return Fit::Whole;
  return better(tagged_call(c, format), named_call(c, tools));
}

}  // namespace

Opening classify_opening(const std::string& text, const CallFormat& format, const std::vector<ToolSpec>& tools) {
  Cursor c{text};
  skip_space(c);
  Fit fit = better(better(better(tagged_call(c, format), marked_name(c, format, tools)), json_call(c, format, tools)),
                   better(named_call(c, tools), fenced_call(c, format, tools)));
  switch (fit) {
    case Fit::Whole: return Opening::Call;
    case Fit::Partial: return Opening::Undecided;
    case Fit::No: break;
  }
  return Opening::Text;
}

std::optional<JsonOpening> json_opening(const std::string& text, const CallFormat& format,
                                        const std::vector<ToolSpec>& tools) {
  if (!format.json_call) return std::nullopt;
  Cursor c{text};
  skip_space(c);
  if (tagged_call(c, format) == Fit::Whole || marked_name(c, format, tools) == Fit::Whole) return std::nullopt;
  const size_t begin = c.at;
  Cursor json = c;
  if (fenced_call(c, format, tools) == Fit::Whole) {
    fence_line(json);
  } else if (json_call(c, format, tools) != Fit::Whole) {
    return std::nullopt;
  }
  if (json.at_end() || (json.text[json.at] != '{' && json.text[json.at] != '[')) return std::nullopt;
  JsonOpening opening{text.substr(begin, json.at - begin), json.text[json.at] == '['};
  skip_list_start(json);
  if (json.text.substr(json.at, 2) == "{{") return std::nullopt;
  return opening;
}

Opening grow_opening(std::string& text, llama_token token, const LoadedModel& model, const std::vector<ToolSpec>& tools) {
  std::string grown = text + model.pieces[size_t(token)];
  const Opening state = classify_opening(grown, model.format, tools);
  const bool control = llama_vocab_get_attr(model.vocab, token) & LLAMA_TOKEN_ATTR_CONTROL;
  if (state == Opening::Text && control) return classify_opening(text, model.format, tools);
  text = std::move(grown);
  return state;
}

OpeningProbe::OpeningProbe(const LoadedModel& model, const std::vector<ToolSpec>& tools, Chooser& chooser,
                           bool stops_at_text)
    : model_(model), tools_(tools), free_(make_strategy(DecodeMode::Free, model, nullptr, chooser)),
      stops_at_text_(stops_at_text) {}

Step OpeningProbe::next(const float* logits) {
  Step step = free_->next(logits);
  if (state_ != Opening::Undecided) return step;
  margin_ = std::min(margin_, step.margin);
  // The end of the answer before anything was decided: a reply in text, if an empty one.
  if (step.tokens.empty()) {
    state_ = Opening::Text;
    return step;
  }
  state_ = grow_opening(text_, step.tokens.front(), model_, tools_);
  if (state_ == Opening::Call) return {{}, 0, false, true, kNoRival};
  if (state_ == Opening::Undecided && ++tokens_ >= kMaxTokens) state_ = Opening::Text;
  if (state_ == Opening::Text && stops_at_text_) return {{}, 0, false, true, kNoRival};
  return step;
}

TextOpening::TextOpening(const LoadedModel& model, const std::vector<ToolSpec>& tools, Chooser& chooser)
    : model_(model), tools_(tools), chooser_(chooser), free_(make_strategy(DecodeMode::Free, model, nullptr, chooser)) {}

Step TextOpening::next(const float* logits) {
  if (decided_) return free_->next(logits);
  const auto opens_no_call = [this](llama_token token) {
    return model_.is_end_of_generation(token) ||
           classify_opening(text_ + model_.pieces[size_t(token)], model_.format, tools_) != Opening::Call;
  };
  float margin = kNoRival;
  const llama_token token = chooser_.choose(logits, model_.vocab_size(), opens_no_call, nullptr, &margin);
  if (token < 0 || model_.is_end_of_generation(token)) return {{}, 0, false, true, margin};
  decided_ = grow_opening(text_, token, model_, tools_) == Opening::Text || ++tokens_ >= OpeningProbe::kMaxTokens;
  return {{token}, 1, false, false, margin};
}

}  // namespace sw
