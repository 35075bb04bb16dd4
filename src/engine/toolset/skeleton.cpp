#include "engine/toolset/skeleton.h"

namespace sw {
namespace {

// Byte offsets at which the tokens start (and the end of the text).
std::vector<size_t> boundaries(const LoadedModel& model, const std::vector<llama_token>& tokens) {
  std::vector<size_t> at{0};
  for (llama_token t : tokens) at.push_back(at.back() + model.pieces[size_t(t)].size());
  return at;
}

bool stable_at(const LoadedModel& model, const std::string& text, size_t cut,
               const std::vector<llama_token>& before, const std::vector<std::string>& continuations) {
  for (const std::string& c : continuations) {
    std::vector<llama_token> whole = model.tokenize(text + c, false);
    std::vector<size_t> at = boundaries(model, whole);
    auto it = std::find(at.begin(), at.end(), cut);
    if (it == at.end()) return false;
    size_t count = size_t(it - at.begin());
    if (count != before.size() || !std::equal(before.begin(), before.end(), whole.begin())) return false;
  }
  return true;
}

void append_all(std::vector<std::string>& out, const std::vector<std::string>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

}  // namespace

Cut cut_at_boundary(const LoadedModel& model, const std::string& text,
                    const std::vector<std::string>& continuations) {
  // Candidate cuts are the boundaries of the text's own tokenization, last first.
  std::vector<llama_token> own = model.tokenize(text, false);
  std::vector<size_t> at = boundaries(model, own);
  for (size_t i = at.size(); i-- > 0;) {
    if (at[i] > text.size()) continue;
    std::vector<llama_token> before(own.begin(), own.begin() + long(i));
    if (model.detokenize(before) != text.substr(0, at[i])) continue;
    if (i == 0 || stable_at(model, text, at[i], before, continuations)) return {before, text.substr(at[i])};
  }
  return {{}, text};
}

std::vector<std::string> value_openings(const Schema& schema, const ArgumentSyntax& syntax) {
  if (syntax.raw(schema)) {
    // A raw string: its text as it is, or nothing before the end marker.
    if (!schema.enum_values.empty()) {
      std::vector<std::string> members;
      for (const Json& v : schema.enum_values) members.push_back(v.get<std::string>() + syntax.value_suffix);
      return members;
    }
    return {"a", "S", "1", " ", "-", "/", "$", syntax.value_suffix};
  }
  std::vector<std::string> out;
  if (schema.nullable) out.push_back("null");
  if (!schema.enum_values.empty()) {
    for (const Json& v : schema.enum_values) out.push_back(syntax.notation.text(v));
    return out;
  }
  for (const Schema& option : schema.any_of) append_all(out, value_openings(option));
  if (!schema.any_of.empty()) return out;
  static const std::vector<std::string> strings{"\"a", "\"S", "\"1", "\" ", "\"\"", "\"-", "\"/", "\"$"};
  static const std::vector<std::string> integers{"1", "42", "-3", "0"};
  static const std::vector<std::string> numbers{"1.5", "-0.25", "3"};
  static const std::vector<std::string> others{"true", "false", "null", "[1", "[\"a", "[]", "[{", "{\"a", "{}"};
  switch (schema.type) {
    case Type::String: append_all(out, strings); break;
    case Type::Integer: append_all(out, integers); break;
    case Type::Number: append_all(out, integers); append_all(out, numbers); break;
    case Type::Boolean: append_all(out, {"true", "false"}); break;
    case Type::Null: out.push_back("null"); break;
    case Type::Array: append_all(out, {"[1", "[\"a", "[]", "[{", "[["}); break;
    case Type::Object: append_all(out, {"{\"a", "{}"}); break;
    case Type::Any:
      append_all(out, strings);
      append_all(out, numbers);
      append_all(out, others);
      break;
  }
  // In a notation other than JSON the strings open with its quote.
  if (!syntax.notation.json()) {
    for (std::string& opening : out) {
      for (size_t at = 0; (at = opening.find('"', at)) != std::string::npos; at += syntax.notation.string_quote.size())
        opening.replace(at, 1, syntax.notation.string_quote);
    }
  }
  return out;
}

Skeleton build_skeleton(const LoadedModel& model, const std::string& head_text,
                        const std::vector<const Property*>& arguments, const CallFormat& format) {
  const ArgumentSyntax& syntax = format.arguments;
  std::vector<std::string> key_texts, after_head;
  for (const Property* p : arguments) {
    key_texts.push_back(syntax.key_text(p->name));
    for (const std::string& opening : value_openings(p->schema, syntax))
      after_head.push_back(key_texts.back() + opening);
  }
  if (arguments.empty()) after_head.push_back(syntax.close.empty() ? format.call_suffix : syntax.close);
  Skeleton skeleton;
  Cut head = cut_at_boundary(model, head_text, after_head);
  skeleton.head = std::move(head.tokens);
  skeleton.head_left = head.left;
  for (size_t i = 0; i < arguments.size(); ++i) {
    Cut key = cut_at_boundary(model, head.left + key_texts[i], value_openings(arguments[i]->schema, syntax));
    skeleton.branches.push_back({arguments[i], key_texts[i], std::move(key.tokens), key.left});
  }
  return skeleton;
}

}  // namespace sw
