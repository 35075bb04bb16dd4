#include "engine/toolset/call_grammar.h"

#include <algorithm>
#include <map>
#include <optional>

#include "engine/toolset/value_rules.h"

namespace sw {
namespace {

using G = GrammarBuilder;

// Turns schemas into grammar rules, values written in a notation (JSON, or Gemma 4's: see
// ValueNotation). Rules for the primitive types are shared.
class SchemaRules {
 public:
  // `syntax`: how the values of a call's arguments are written (its notation, its nested objects).
  SchemaRules(GrammarBuilder& b, const ArgumentSyntax& syntax)
      : b_(b), notation_(syntax.notation), nested_(syntax.nested()) {}

  Sequence value(const Schema& schema, const std::string& name) {
    std::vector<Sequence> alternatives = value_alternatives(schema, name);
    if (schema.nullable) alternatives.push_back(G::literal("null"));
    if (alternatives.size() == 1) return alternatives.front();
    return b_.ref(b_.add(name, std::move(alternatives)));
  }

  // {"a": <a>, "b": <b>}: required properties always, optional ones at most once, in the
  // reference order (see call_grammar.h). A call's arguments are written in its format's
  // `syntax`; every object inside them in the syntax's nested() one.
  Sequence object(const std::vector<Property>& declared, const std::string& name, const ArgumentSyntax& syntax) {
    const std::vector<Property> properties = reference_order(declared);
    std::vector<Sequence> members = member_sequences(properties, name, syntax);
    std::vector<Sequence> tail = member_tails(properties, members, name, syntax);
    // The first member present has no leading ", ": it is the first required one, or any
    // optional one before it.
    std::vector<Sequence> starts;
    size_t i = 0;
    for (; i < properties.size(); ++i) {
      starts.push_back(members[i] + tail[i + 1]);
      if (properties[i].required) break;
    }
    if (i == properties.size()) starts.push_back({});  // all optional: {} is valid
    Sequence inside = starts.size() == 1 ? starts.front() : b_.ref(b_.add(name + "-members", starts));
    return G::literal(syntax.open) + inside + G::literal(syntax.close);
  }

  // The end of a call's arguments whose members so far are written: the optional `properties`,
  // each at most once, in order, each after the separator; then the close.
  Sequence object_rest(const std::vector<Property>& optional, const std::string& name, const ArgumentSyntax& syntax) {
    std::vector<Sequence> members = member_sequences(optional, name, syntax);
    return member_tails(optional, members, name, syntax).front() + G::literal(syntax.close);
  }

  // An argument's value as the syntax writes it, its end marker included where it has one.
  Sequence member_value(const Schema& schema, const std::string& name, const ArgumentSyntax& syntax) {
    if (!syntax.tagged) return value(schema, name);
    if (!syntax.raw(schema)) return value(schema, name) + G::literal(syntax.value_suffix);
    if (!schema.enum_values.empty()) {
      std::vector<Sequence> members;
      for (const Json& v : schema.enum_values) members.push_back(G::literal(v.get<std::string>() + syntax.value_suffix));
      return b_.ref(b_.add(name, std::move(members)));
    }
    if (has_string_keywords(schema)) return string_value(b_, schema, syntax.value_suffix);
    return b_.ref(shared("raw-text", [&] { return text_until(syntax.value_suffix); }));
  }

  Sequence string() {
    if (!notation_.json())
      return b_.ref(shared("quoted-text", [&] { return quoted(text_until(notation_.string_quote)); }));
    return b_.ref(shared("string", [&] { return string_rule(); }));
  }

 private:
  std::vector<Sequence> value_alternatives(const Schema& schema, const std::string& name) {
    if (!schema.enum_values.empty()) {
      std::vector<Sequence> literals;
      for (const Json& v : schema.enum_values) literals.push_back(G::literal(notation_.text(v)));
      return literals;
    }
    if (!schema.any_of.empty()) {
      std::vector<Sequence> alternatives;
      for (size_t i = 0; i < schema.any_of.size(); ++i)
        alternatives.push_back(value(schema.any_of[i], name + "-" + std::to_string(i)));
      return alternatives;
    }
    // Value keywords (lengths, patterns, bounds, item counts) shape the grammar: value_rules.h.
    switch (schema.type) {
      case Type::String:
        if (!has_string_keywords(schema)) return {string()};
        if (notation_.json()) return {string_value(b_, schema)};
        return {G::literal(notation_.string_quote) + string_value(b_, schema, notation_.string_quote)};
      case Type::Integer:
        if (has_number_keywords(schema)) return {number_value(b_, schema)};
        return {b_.ref(shared("integer", [&] { return integer_rule(); }))};
      case Type::Number:
        if (has_number_keywords(schema)) return {number_value(b_, schema)};
        return {b_.ref(shared("number", [&] { return number_rule(); }))};
      case Type::Boolean: return {G::literal("true"), G::literal("false")};
      case Type::Null: return {G::literal("null")};
      case Type::Array: return {array_of(schema, name)};
      case Type::Object:
        return {schema.free_form ? free_object(schema.items ? value(*schema.items, name + "-value") : any())
                                : object(schema.properties, name, nested_)};
      case Type::Any: return {any()};
    }
    return {any()};
  }

  std::vector<Sequence> member_sequences(const std::vector<Property>& properties, const std::string& name,
                                         const ArgumentSyntax& syntax) {
    std::vector<Sequence> members;
    for (const Property& p : properties) {
      try {
        members.push_back(G::literal(syntax.key_text(p.name)) + member_value(p.schema, name + "-" + p.name, syntax));
      } catch (const Error& e) {
        throw Error("argument '" + p.name + "': " + e.what());
      }
    }
    return members;
  }

  // tail[i]: the members from i on, each preceded by the separator; optional ones may be skipped.
  std::vector<Sequence> member_tails(const std::vector<Property>& properties, const std::vector<Sequence>& members,
                                     const std::string& name, const ArgumentSyntax& syntax) {
    std::vector<Sequence> tail(properties.size() + 1);
    for (size_t i = properties.size(); i-- > 0;) {
      Sequence present = G::literal(syntax.separator) + members[i] + tail[i + 1];
      tail[i] = properties[i].required ? present : b_.ref(b_.add(name + "-rest", {present, tail[i + 1]}));
    }
    return tail;
  }

  template <class Make>
  uint32_t shared(const std::string& name, Make make) {
    auto found = shared_.find(name);
    if (found != shared_.end()) return found->second;
    uint32_t rule = b_.declare(name);
    shared_[name] = rule;  // before make(): recursive types refer to themselves
    b_.define(rule, make());
    return rule;
  }

  std::vector<Sequence> string_rule() {
    ByteSet plain;
    for (int c = 0x20; c < 256; ++c) plain.set(size_t(c));
    plain.reset('"');
    plain.reset('\\');
    ByteSet hex;
    for (const char* c = "0123456789abcdefABCDEF"; *c; ++c) hex.set((unsigned char)*c);
    ByteSet simple_escape;
    for (const char* c = "\"\\/bfnrt"; *c; ++c) simple_escape.set((unsigned char)*c);
    uint32_t character = b_.add("char", {G::bytes(plain), G::literal("\\") + G::bytes(simple_escape),
                                         G::literal("\\u") + G::bytes(hex) + G::bytes(hex) +
                                             G::bytes(hex) + G::bytes(hex)});
    uint32_t chars = b_.star("chars", b_.ref(character));
    return {G::literal("\"") + b_.ref(chars) + G::literal("\"")};
  }

  // Any text up to and including the first occurrence of `end` (a raw value and its end
  // marker): an automaton whose state is the longest start of `end` the text ends with.
  std::vector<Sequence> text_until(const std::string& end) {
    ByteSet text;
    for (int c = 0x20; c < 256; ++c) text.set(size_t(c));
    text.set('\t').set('\n').set('\r');
    const auto next_state = [&](size_t state, unsigned char c) {
      const std::string seen = end.substr(0, state) + char(c);
      for (size_t n = std::min(seen.size(), end.size()); n > 0; --n) {
        if (seen.compare(seen.size() - n, n, end, 0, n) == 0) return n;
      }
      return size_t(0);
    };
    std::vector<uint32_t> states;
    for (size_t state = 0; state < end.size(); ++state) states.push_back(b_.declare("raw-text"));
    for (size_t state = 0; state < end.size(); ++state) {
      std::map<size_t, ByteSet> by_target;
      for (int c = 0; c < 256; ++c) {
        if (text.test(size_t(c))) by_target[next_state(state, (unsigned char)c)].set(size_t(c));
      }
      std::vector<Sequence> alternatives;
      for (const auto& [target, bytes] : by_target)
        alternatives.push_back(target == end.size() ? G::bytes(bytes) : G::bytes(bytes) + b_.ref(states[target]));
      b_.define(states[state], std::move(alternatives));
    }
    return {b_.ref(states[0])};
  }

  // Numbers as JSON writes them, their digits bounded (kMaxNumberDigits).
  std::vector<Sequence> integer_rule() {
    const Sequence digit = G::byte_range('0', '9');
    uint32_t more = b_.at_most("int-tail", kMaxNumberDigits - 1, digit);
    uint32_t natural = b_.add("natural", {G::literal("0"), G::byte_range('1', '9') + b_.ref(more)});
    return {b_.ref(natural), G::literal("-") + b_.ref(natural)};
  }

  std::vector<Sequence> number_rule() {
    const Sequence digit = G::byte_range('0', '9');
    Sequence integer = b_.ref(shared("integer", [&] { return integer_rule(); }));
    uint32_t fraction_digits = b_.at_most("fraction-digits", kMaxNumberDigits - 1, digit);
    uint32_t fraction = b_.add("fraction", {G::literal(".") + digit + b_.ref(fraction_digits), {}});
    ByteSet e, sign;
    e.set('e'); e.set('E'); sign.set('+'); sign.set('-');
    uint32_t exp_sign = b_.add("exp-sign", {G::bytes(sign), {}});
    uint32_t exp_digits = b_.at_most("exp-digits", kMaxExponentDigits - 1, digit);
    uint32_t exponent = b_.add("exponent", {G::bytes(e) + b_.ref(exp_sign) + digit + b_.ref(exp_digits), {}});
    return {integer + b_.ref(fraction) + b_.ref(exponent)};
  }

  Sequence array(const Sequence& item) {
    uint32_t more = b_.star("items", G::literal(notation_.item_separator()) + item);
    uint32_t items = b_.add("array-items", {item + b_.ref(more), {}});
    return G::literal("[") + b_.ref(items) + G::literal("]");
  }

  // An array as the schema has it: a tuple's elements by position (then any number of the
  // items after them, if the schema types them), or items counted by minItems..maxItems.
  Sequence array_of(const Schema& schema, const std::string& name) {
    const Sequence item = schema.items ? value(*schema.items, name + "-item") : any();
    if (!schema.prefix_items.empty()) {
      Sequence elements;
      for (size_t i = 0; i < schema.prefix_items.size(); ++i)
        elements = elements + G::literal(i ? notation_.item_separator() : "") +
                   value(schema.prefix_items[i], name + "-" + std::to_string(i));
      if (schema.items && !schema.closed_tuple)
        elements = elements + b_.ref(b_.star("items", G::literal(notation_.item_separator()) + item));
      return G::literal("[") + elements + G::literal("]");
    }
    const Json& c = schema.checks;
    if (!c.contains("minItems") && !c.contains("maxItems")) return array(item);
    const int least = c.value("minItems", 0);
    std::optional<int> most;
    if (c.contains("maxItems")) most = c["maxItems"].get<int>();
    if (most && *most == 0) return G::literal("[]");
    // After the first item: least - 1 more that must come, then up to most - least that may.
    Sequence after_first;
    const Sequence separator = G::literal(notation_.item_separator());
    for (int i = 1; i < least; ++i) after_first = after_first + separator + item;
    Sequence optional_more = most ? Sequence{} : b_.ref(b_.star("items", separator + item));
    for (int i = std::max(least, 1); most && i < *most; ++i)
      optional_more = b_.ref(b_.add("more-items", {separator + item + optional_more, {}}));
    Sequence items = G::literal("[") + item + after_first + optional_more + G::literal("]");
    return least == 0 ? b_.ref(b_.add("counted-array", {G::literal("[]"), items})) : items;
  }

  // An object of any keys; in a notation other than JSON its keys are bare, any text up to ':'
  // but '}' and the quote's first byte.
  Sequence free_object(const Sequence& member_value) {
    Sequence member = notation_.json() ? string() + G::literal(": ") + member_value
                                       : bare_key() + G::literal(":") + member_value;
    uint32_t more = b_.star("members", G::literal(nested_.separator) + member);
    uint32_t members = b_.add("object-members", {member + b_.ref(more), {}});
    return G::literal("{") + b_.ref(members) + G::literal("}");
  }

  // Any JSON value (free-form dicts, untyped arrays, "any").
  Sequence any() {
    return b_.ref(shared("value", [&] {
      Sequence self = b_.ref(shared_.at("value"));
      return std::vector<Sequence>{
          string(), b_.ref(shared("number", [&] { return number_rule(); })),
          G::literal("true"), G::literal("false"), G::literal("null"), array(self),
          free_object(self)};
    }));
  }

  Sequence bare_key() {
    return b_.ref(shared("bare-key", [&] {
      ByteSet key;
      for (int c = 0x20; c < 256; ++c) key.set(size_t(c));
      for (char c : {':', '}', notation_.string_quote[0]}) key.reset((unsigned char)c);
      return std::vector<Sequence>{G::bytes(key) + b_.ref(b_.star("bare-key-tail", G::bytes(key)))};
    }));
  }

  // A notation's string: its quote, the raw text, the quote (the text ends at its first quote).
  std::vector<Sequence> quoted(std::vector<Sequence> text_and_quote) {
    for (Sequence& s : text_and_quote) s = G::literal(notation_.string_quote) + s;
    return text_and_quote;
  }

  GrammarBuilder& b_;
  const ValueNotation notation_;
  const ArgumentSyntax nested_;
  std::map<std::string, uint32_t> shared_;
};

}  // namespace

std::vector<Property> reference_order(const std::vector<Property>& declared) {
  std::vector<Property> ordered = declared;
  std::stable_partition(ordered.begin(), ordered.end(), [](const Property& p) { return p.required; });
  return ordered;
}

namespace {

// What follows a call's arguments object: the format's call suffix, after the call's id where
// the format's calls carry one (the model chooses it, in letters and digits).
Sequence call_ending(SchemaRules& rules, const CallFormat& format) {
  if (format.id_prefix.empty()) return G::literal(format.call_suffix);
  Schema id;
  id.type = Type::String;
  id.checks = {{"pattern", "^[a-zA-Z0-9]{" + std::to_string(format.id_length) + "}$"}};
  return G::literal(format.id_prefix) + rules.value(id, "call-id") + G::literal(format.call_suffix);
}

// A call's arguments object: its declared properties, or any keys where the answer's root is
// free-form (ToolSpec::free_form_arguments, a JSON object).
Sequence arguments_object(SchemaRules& rules, const std::vector<Property>& declared, const Schema* free_form,
                          const std::string& name, const ArgumentSyntax& syntax) {
  if (!free_form) return rules.object(declared, name, syntax);
  if (!syntax.notation.json()) throw Error("internal: a free-form answer is a JSON object");
  return rules.value(*free_form, name);
}

bool separator_extends_closer(const CallFormat& format) {
  return !format.closer.empty() && format.separator.rfind(format.closer, 0) == 0;
}

// The end of a turn: its closer - and, where another call may follow and the separator goes on
// from the closer with a line break (</tool_call>\n<tool_call>), that line break too, if the
// model writes it and then ends. A model that ends its turn on a new line is not beginning
// another call: read so, Qwen2.5-Coder-1.5B, made to go on, writes call after call.
Sequence turn_end(GrammarBuilder& b, const CallFormat& format, bool more_calls) {
  Sequence closer = G::literal(format.closer);
  if (!more_calls || !separator_extends_closer(format)) return closer;
  const std::string rest = format.separator.substr(format.closer.size());
  const std::string space = rest.substr(0, rest.find_first_not_of(" \t\r\n"));
  if (space.empty()) return closer;
  return closer + b.ref(b.add("space-after-turn", {G::literal(space), {}}));
}

// The grammar, told where the next call opens after a point where the turn may end: at the
// call's own marker where the separator writes one (<tool_call>: from there jump-forward writes
// the rest in one pass), else at its name. `more_calls`: whether another call may follow at all.
std::shared_ptr<const Grammar> with_next_call_opening(Grammar grammar, const CallFormat& format,
                                                      bool more_calls) {
  if (more_calls && separator_extends_closer(format)) {
    const bool marked = !format.call_start.empty() &&
                        format.separator.find(format.call_start, format.closer.size()) != std::string::npos;
    grammar.next_call_opening = marked ? format.call_start : format.name_prefix;
  }
  return std::make_shared<const Grammar>(std::move(grammar));
}

}  // namespace

std::shared_ptr<const Grammar> build_call_grammar(const CallFormat& format,
                                                  const std::vector<ToolSpec>& tools, int max_calls) {
  if (tools.empty()) throw Error("cannot build a call grammar without tools");
  GrammarBuilder b;
  SchemaRules rules(b, format.arguments);
  std::vector<Sequence> per_tool;
  for (const ToolSpec& tool : tools) {
    const std::string name = format.named ? tool.name + format.name_suffix : "";
    per_tool.push_back(G::literal(name + format.args_prefix) +
                       arguments_object(rules, tool.arguments, tool.free_form_arguments.get(), "args-" + tool.name,
                                        format.arguments) +
                       call_ending(rules, format));
  }
  uint32_t call = b.add("call", {G::literal(format.name_prefix) + b.ref(b.add("tool", per_tool))});
  Sequence more_call = G::literal(format.separator) + b.ref(call);
  Sequence more;  // what may follow the first call: any number of calls, or up to max_calls - 1
  if (!format.parallel) max_calls = 1;
  if (max_calls <= 0) more = b.ref(b.star("more-calls", more_call));
  for (int n = 1; n < max_calls; ++n) more = b.ref(b.add("more-calls", {more_call + more, {}}));
  const bool more_calls = max_calls != 1;
  uint32_t root =
      b.add("answer", {G::literal(format.opener) + b.ref(call) + more + turn_end(b, format, more_calls)});
  return with_next_call_opening(b.build(root), format, more_calls);
}

std::shared_ptr<const Grammar> build_value_grammar(const Schema& schema, const std::string& prefix,
                                                   const ArgumentSyntax& syntax) {
  GrammarBuilder b;
  SchemaRules rules(b, syntax);
  uint32_t root = b.add("value", {G::literal(prefix) + rules.member_value(schema, "v", syntax)});
  return std::make_shared<const Grammar>(b.build(root));
}

std::shared_ptr<const Grammar> build_head_grammar(const std::string& prefix, const CallFormat& format,
                                                  const std::vector<ToolSpec>& tools) {
  if (tools.empty()) throw Error("cannot build a call grammar without tools");
  if (!format.named) throw Error("internal: an answer in a schema has no name to decode");
  GrammarBuilder b;
  std::vector<Sequence> names;
  for (const ToolSpec& tool : tools) names.push_back(G::literal(tool.name + format.name_suffix));
  uint32_t root = b.add("head", {G::literal(prefix + format.name_prefix) + b.ref(b.add("tool", names))});
  return std::make_shared<const Grammar>(b.build(root));
}

std::shared_ptr<const Grammar> build_tail_grammar(const std::string& prefix, const CallFormat& format,
                                                  const std::vector<Property>& optional, Members members,
                                                  NextCall next, const Schema* free_form) {
  GrammarBuilder b;
  SchemaRules rules(b, format.arguments);
  Sequence object = members == Members::Written
                        ? rules.object_rest(optional, "args", format.arguments)
                        : arguments_object(rules, optional, free_form, "args", format.arguments);
  const bool more_calls = next == NextCall::Allowed && format.parallel;
  std::vector<Sequence> ends{turn_end(b, format, more_calls)};
  if (more_calls) ends.push_back(G::literal(format.separator));
  uint32_t end = b.add("end", ends);
  uint32_t root = b.add("tail", {G::literal(prefix) + object + call_ending(rules, format) + b.ref(end)});
  return with_next_call_opening(b.build(root), format, more_calls);
}

}  // namespace sw
