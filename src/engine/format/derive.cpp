// A model's call format from llama.cpp's analysis of its chat template, checked by llama.cpp's
// own parser reading sample calls back; the syntaxes of llama.cpp's handlers written here; the
// library's own choice where the template gives none.
#include "engine/format/format.h"

#include <algorithm>
#include <optional>

#include "engine/chat/llama_chat.h"

namespace sw {
namespace {

// The template's own text of a sample turn, cut into a format's pieces where the analysis says
// the markers and the sample's names and arguments are. Throws Error when the sample does not
// hold what the analysis describes.
class SampleTurn {
 public:
  SampleTurn(const llama_chat::CallAnalysis& a, CallFormat& f) : a_(a), f_(f), text_(a.sample) {}

  void cut() {
    const int calls = a_.parallel ? 2 : 1;
    size_t call_begin[2] = {0, 0}, call_end[2] = {0, 0};
    size_t from = 0;
    for (int i = 0; i < calls; ++i) {
      locate_call(i, from, call_begin[i], call_end[i]);
      from = call_end[i];
    }
    const size_t turn_begin = opening_marker(call_begin[0]);
    f_.opener = text_.substr(turn_begin, call_begin[0] - turn_begin);
    if (calls == 2) f_.separator = text_.substr(call_end[0], call_begin[1] - call_end[0]);
    const size_t last = call_end[calls - 1];
    f_.closer = text_.substr(last, closing_marker(last) - last);
  }

 private:
  static constexpr const char* const* kNames = llama_chat::CallAnalysis::kSampleNames;

  void locate_call(int i, size_t from, size_t& begin, size_t& end) {
    const std::string name = kNames[i];
    const size_t at = text_.find(name, from);
    if (at == std::string::npos) throw Error("the template's sample turn does not name its tool");
    // A JSON call begins at its object's brace (the name prefix is what the template writes up to
    // the name); a call that names its tool in markers begins at the analysis's name prefix.
    if (f_.json_call) {
      begin = text_.rfind('{', at);
      if (begin == std::string::npos || begin < from) throw Error("the template's call is not a JSON object");
      if (i == 0) f_.name_prefix = text_.substr(begin, at - begin);
    } else {
      // With no marker around the calls, what the turn writes before the name marks a call
      // (gpt-oss: " to=functions.NAME"), where the analysis leaves the name's prefix empty.
      if (i == 0 && f_.name_prefix.empty() && a_.call_start.empty() && a_.section_start.empty())
        f_.name_prefix = text_.substr(from, at - from);
      begin = at - std::min(at, f_.name_prefix.size());
      if (text_.compare(begin, f_.name_prefix.size(), f_.name_prefix) != 0)
        throw Error("the template's call does not hold the name's markers the analysis found");
    }
    const size_t after = at + name.size();
    if (text_.compare(after, f_.name_suffix.size(), f_.name_suffix) != 0)
      throw Error("the template's call does not end the tool's name as the analysis found");
    if (f_.arguments.tagged) return locate_tagged_arguments(i, after + f_.name_suffix.size(), end);
    const size_t args = text_.find('{', after);
    const size_t args_end = args == std::string::npos ? args : json_value_end(text_, args);
    if (args_end == std::string::npos) throw Error("the template's call holds no arguments object");
    const size_t args_from = after + f_.name_suffix.size();
    if (i == 0) f_.args_prefix = text_.substr(args_from, args - args_from);
    if (f_.json_call) {
      end = json_value_end(text_, begin);
      if (end == std::string::npos || args > end) throw Error("the template's call holds no arguments object");
      if (i == 0) cut_id(args_end, end, i);
      return;
    }
    const size_t close_at = a_.close.empty() ? args_end : text_.find(a_.close, args_end);
    end = close_at == std::string::npos ? args_end : close_at + a_.close.size();
    if (i == 0) f_.call_suffix = text_.substr(args_end, end - args_end);
  }

  // A tagged call's sample argument (its name and value) from `from` on, the text between as
  // the call's args_prefix and the text after it to the call's close as its call_suffix.
  void locate_tagged_arguments(int i, size_t from, size_t& end) {
    static const char* const kValues[2] = {"x", "7"};  // kSampleArguments' values, as a template writes them
    const std::string key = Json::parse(llama_chat::CallAnalysis::kSampleArguments[i]).begin().key();
    const std::string member = f_.arguments.key_text(key) + kValues[i] + f_.arguments.value_suffix;
    const size_t at = text_.find(member, from);
    if (at == std::string::npos) throw Error("the template's call does not write its argument as the analysis found");
    if (i == 0) f_.args_prefix = text_.substr(from, at - from);
    const size_t members_end = at + member.size();
    const size_t close_at = a_.close.empty() ? members_end : text_.find(a_.close, members_end);
    end = close_at == std::string::npos ? members_end : close_at + a_.close.size();
    if (i == 0) f_.call_suffix = text_.substr(members_end, end - members_end);
  }

  // The sample's call id between the arguments' end and the call's, if the template writes one.
  void cut_id(size_t args_end, size_t call_end, int i) {
    const std::string id = std::string("\"") + llama_chat::CallAnalysis::kSampleIds[i] + "\"";
    const size_t at = text_.find(id, args_end);
    if (at == std::string::npos || at >= call_end) return;
    f_.id_prefix = text_.substr(args_end, at - args_end);
    f_.id_length = int(id.size()) - 2;
    f_.call_suffix = text_.substr(at + id.size(), call_end - at - id.size());
  }

  // Where the turn's calls open: the section's or the first call's marker, or a list's bracket.
  size_t opening_marker(size_t first_call) const {
    for (const std::string& marker : {a_.section_start, a_.call_start}) {
      if (marker.empty()) continue;
      const size_t at = text_.rfind(marker, first_call);
      if (at != std::string::npos) return at;
    }
    if (a_.list) {
      const size_t at = text_.rfind('[', first_call);
      if (at != std::string::npos) return at;
    }
    return first_call;
  }

  // One past where the turn's calls close: the section's or the last call's marker, or a list's
  // bracket.
  size_t closing_marker(size_t last_call) const {
    for (const std::string& marker : {a_.section_end, a_.call_end, std::string(a_.list ? "]" : "")}) {
      if (marker.empty()) continue;
      const size_t at = text_.find(marker, last_call);
      if (at != std::string::npos) return at + marker.size();
    }
    return last_call;
  }

  const llama_chat::CallAnalysis& a_;
  CallFormat& f_;
  const std::string& text_;
};

// The analysis with a tagged value's suffix cut where llama.cpp's analysis runs it on into what
// follows the call's last argument, for a template whose calls it finds no close of: MiniCPM5's
// "</param></function><|im_end|>" is the value's "</param>", then the call's close "</function>".
// (Checked, as every derived format, by llama.cpp's parser reading the sample calls back.)
llama_chat::CallAnalysis with_value_suffix_cut(llama_chat::CallAnalysis a) {
  if (a.mode != "TAG_WITH_TAGGED" || !a.close.empty()) return a;
  const std::string& suffix = a.arg_value_suffix;
  const size_t first_end = suffix.find('>');
  if (first_end == std::string::npos) return a;
  const size_t next_begin = suffix.find('<', first_end);
  const size_t next_end = next_begin == std::string::npos ? next_begin : suffix.find('>', next_begin);
  if (next_end == std::string::npos) return a;
  a.close = suffix.substr(next_begin, next_end + 1 - next_begin);
  a.arg_value_suffix = suffix.substr(0, first_end + 1);
  return a;
}

// Why the analysis gives no format this library can write ("" when it does).
std::string unwritable(const llama_chat::CallAnalysis& a) {
  if (!a.supports_tools) return "the template does not show the model its tools";
  if (a.mode == "NONE") return "llama.cpp's template analysis finds no tool calls in the template";
  if (a.mode != "JSON_NATIVE" && a.mode != "TAG_WITH_JSON" && a.mode != "TAG_WITH_TAGGED")
    return "llama.cpp's analysis names an unknown syntax '" + a.mode + "'";
  if (a.name_is_key) return "its calls use the tool's name as a JSON key";
  if (a.id_in_markers) return "its calls carry an id in markers of its own, not written here yet";
  if (a.name_field.find('.') != std::string::npos) return "its calls nest the name in a wrapper object";
  if (a.mode != "JSON_NATIVE" && a.name_suffix.empty() && a.args_separator.empty())
    return "nothing ends a tool's name in its calls";
  if (a.mode == "TAG_WITH_TAGGED" && a.arg_value_suffix.empty()) return "nothing ends an argument's value in its calls";
  if (a.mode == "TAG_WITH_TAGGED" && a.arg_name_suffix.empty() && a.arg_value_prefix.empty())
    return "nothing ends an argument's name in its calls";
  return "";
}

// Whether llama.cpp's parser of the template reads the format's text of the sample calls,
// after `before` (what an answer starts with), back as those calls.
bool reads_sample_calls(const llama_chat::Templates& templates, const CallFormat& format, const std::string& before) {
  const int count = format.parallel ? 2 : 1;
  std::vector<ToolCall> calls;
  for (int i = 0; i < count; ++i)
    calls.push_back({llama_chat::CallAnalysis::kSampleNames[i], Json::parse(llama_chat::CallAnalysis::kSampleArguments[i])});
  return templates.reads_as_sample(before + format.calls_text(calls), count);
}

// The format the analysis describes, its texts cut from the template's sample turn. Throws
// Error when the sample does not hold what the analysis describes.
CallFormat analysed_format(const llama_chat::CallAnalysis& analysis) {
  CallFormat f;
  f.name = "template";
  f.family = "template";
  f.json_call = analysis.mode == "JSON_NATIVE";
  if (f.json_call) {
    f.name_field = analysis.name_field;
    f.args_field = analysis.args_field;
  } else {
    // Where no marker follows the name, the marker before the arguments ends it (Mistral's [ARGS]).
    f.name_prefix = analysis.name_prefix;
    f.name_suffix = analysis.name_suffix.empty() ? analysis.args_separator : analysis.name_suffix;
  }
  if (analysis.mode == "TAG_WITH_TAGGED") {
    // The members' own start and end markers (none in the templates seen) stay in the call's
    // args_prefix and call_suffix, cut from the sample.
    ArgumentSyntax& a = f.arguments;
    a.tagged = true;
    a.open = a.close = "";
    a.name_prefix = analysis.arg_name_prefix;
    a.name_suffix = analysis.arg_name_suffix + analysis.arg_value_prefix;
    a.value_suffix = analysis.arg_value_suffix;
    a.separator = analysis.arg_separator;
  }
  f.call_start = analysis.call_start;
  f.call_end = analysis.call_end;
  f.section_start = analysis.section_start;
  f.parallel = analysis.parallel;
  f.list = analysis.list;
  SampleTurn(analysis, f).cut();
  // Another call is decided where the separator begins: calls with nothing between them are
  // written one a turn.
  if (f.separator.empty()) f.parallel = false;
  return f;
}

// The calls of a handler's syntax written here: the tool named in markers (`name_suffix` ends
// the name), its arguments keywords (KEY `key_suffix` VALUE, joined by `member_separator`), then
// `call_suffix`; the turn's markers are the caller's to set.
CallFormat keyword_calls(const std::string& name_suffix, const std::string& key_suffix,
                         const std::string& member_separator, const std::string& call_suffix) {
  CallFormat f;
  f.name = f.family = "template";
  f.json_call = false;
  f.name_suffix = name_suffix;
  f.args_prefix = "";
  f.call_suffix = call_suffix;
  ArgumentSyntax& a = f.arguments;
  a.keywords = true;
  a.open = a.close = a.name_prefix = "";
  a.name_suffix = key_suffix;
  a.separator = member_separator;
  return f;
}

// The format as llama.cpp's parser of the template reads it: itself where the parser reads the
// format's text of the sample calls back into those calls, else one call a turn where it reads
// that (MiniMax-M2's parser expects parallel calls separated by ", ", where its template writes a
// newline); nullopt where it reads neither. `before`: what an answer starts with.
std::optional<CallFormat> as_llama_reads(const llama_chat::Templates& templates, const CallFormat& f,
                                         const std::string& before) {
  if (reads_sample_calls(templates, f, before)) return f;
  CallFormat single = f;
  single.parallel = false;
  if (f.parallel && reads_sample_calls(templates, single, before)) return single;
  return std::nullopt;
}

}  // namespace

// The python-like calls llama.cpp reads with LFM2's handler of its own, whose templates its
// analysis finds no calls in (LFM2.5-Instruct's does not write them):
// <|tool_call_start|>[NAME(KEY=VALUE, ...), ...]<|tool_call_end|>, each value JSON.
CallFormat CallFormat::python_like_calls() {
  CallFormat f = keyword_calls("(", "=", ", ", ")");
  // The marker opens the turn's calls, which are read one after another to their ends (a string
  // may hold the markers: the text is not cut at them).
  f.opener = f.section_start = "<|tool_call_start|>[";
  f.closer = "]<|tool_call_end|>";
  f.separator = ", ";
  f.name_prefix = "";
  return f;
}

// Gemma 4's calls, which llama.cpp reads with a handler of its own (its analysis misreads them):
// <|tool_call>call:NAME{KEY:VALUE,...}<tool_call|> per call, the values in Gemma 4's notation
// (ValueNotation: strings raw between <|"|>, keys bare). The next call's marker is the separator
// (calls follow one another with nothing between), so that it is what decides another call.
CallFormat CallFormat::gemma4_calls() {
  CallFormat f = keyword_calls("{", ":", ",", "}<tool_call|>");
  f.arguments.notation.string_quote = "<|\"|>";
  f.opener = f.separator = f.section_start = "<|tool_call>";
  f.closer = "";
  f.name_prefix = "call:";
  return f;
}

CallFormat CallFormat::detect(const std::string& chat_template, bool has_tool_call_token) {
  if (chat_template.find("<tool_call>") != std::string::npos || has_tool_call_token) return by_name("hermes");
  if (chat_template.find("SmolLM") != std::string::npos) return by_name("smollm2");
  return by_name("json");
}

CallFormat CallFormat::derive(const llama_chat::CallAnalysis& found, const llama_chat::Templates& templates,
                              const llama_chat::ReasoningBlock& reasoning, const std::string& chat_template,
                              bool has_tool_call_token) {
  const llama_chat::CallAnalysis analysis = with_value_suffix_cut(found);
  // An answer to a template that always opens a thinking block starts with its close.
  const std::string before = reasoning.always_open ? reasoning.close : "";
  std::string why = unwritable(analysis);
  if (why.empty()) {
    try {
      if (std::optional<CallFormat> read = as_llama_reads(templates, analysed_format(analysis), before)) return *read;
      why = analysis.specialized ? "llama.cpp reads this template's calls with a handler of its own, which does not "
                                   "read them as its template analysis describes them"
                                 : "llama.cpp's parser does not read the calls as its template analysis describes them";
    } catch (const Error& e) {
      why = e.what();
    }
  }
  // The syntaxes of llama.cpp's handlers written here, for a template it reads with a handler of
  // its own: each kept only where that handler's parser reads it back.
  if (analysis.specialized && analysis.supports_tools) {
    for (const CallFormat& written : {python_like_calls(), gemma4_calls()}) {
      if (std::optional<CallFormat> read = as_llama_reads(templates, written, before)) return *read;
    }
  }
  CallFormat f = detect(chat_template, has_tool_call_token);
  f.fallback_reason = why;
  return f;
}

}  // namespace sw
