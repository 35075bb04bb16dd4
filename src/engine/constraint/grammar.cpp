#include "engine/constraint/grammar.h"

#include <stdexcept>

namespace sw {
namespace {

std::string escape_byte(int byte, bool in_class) {
  static const char* hex = "0123456789ABCDEF";
  if (byte == '"' && !in_class) return "\\\"";
  if (byte == '\\') return "\\\\";
  if (in_class && (byte == ']' || byte == '-' || byte == '^')) return std::string("\\") + char(byte);
  if (byte == '\n') return "\\n";
  if (byte < 0x20 || byte >= 0x7f) return std::string("\\x") + hex[byte >> 4] + hex[byte & 15];
  return std::string(1, char(byte));
}

std::string set_to_gbnf(const ByteSet& set) {
  if (set.count() == 1) {
    for (int b = 0; b < 256; ++b) {
      if (set.test(b)) return "\"" + escape_byte(b, false) + "\"";
    }
  }
  // Print the shorter of the set and its complement, as ranges.
  bool negate = set.count() > 128;
  ByteSet shown = negate ? ~set : set;
  std::string out = negate ? "[^" : "[";
  for (int b = 0; b < 256;) {
    if (!shown.test(b)) { ++b; continue; }
    int end = b;
    while (end + 1 < 256 && shown.test(end + 1)) ++end;
    out += escape_byte(b, true);
    if (end > b) out += "-" + escape_byte(end, true);
    b = end + 1;
  }
  return out + "]";
}

}  // namespace

Sequence operator+(Sequence a, const Sequence& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Sequence GrammarBuilder::literal(std::string_view text) {
  Sequence seq;
  for (unsigned char c : text) {
    Element e;
    e.kind = Element::Kind::Bytes;
    e.bytes.set(c);
    seq.push_back(e);
  }
  return seq;
}

Sequence GrammarBuilder::bytes(const ByteSet& set) {
  Element e;
  e.kind = Element::Kind::Bytes;
  e.bytes = set;
  return {e};
}

Sequence GrammarBuilder::byte_range(uint8_t first, uint8_t last) {
  ByteSet set;
  for (int b = first; b <= last; ++b) set.set(size_t(b));
  return bytes(set);
}

Sequence GrammarBuilder::ref(uint32_t rule) const {
  Element e;
  e.kind = Element::Kind::Rule;
  e.rule = rule;
  return {e};
}

uint32_t GrammarBuilder::declare(const std::string& name) {
  // Each name counts its own suffixes: thousands of rules of one name (a pattern's states) take
  // constant time each.
  std::string unique = name;
  for (int& n = last_suffix_[name]; names_.count(unique);) unique = name + "-" + std::to_string(++n + 1);
  names_.insert(unique);
  grammar_.names.push_back(unique);
  grammar_.rules.emplace_back();
  return uint32_t(grammar_.rules.size() - 1);
}

void GrammarBuilder::define(uint32_t rule, std::vector<Sequence> alternatives) {
  for (Sequence& alt : alternatives) alt.push_back(Element{});  // End
  grammar_.rules.at(rule) = std::move(alternatives);
}

uint32_t GrammarBuilder::add(const std::string& name, std::vector<Sequence> alternatives) {
  uint32_t rule = declare(name);
  define(rule, std::move(alternatives));
  return rule;
}

uint32_t GrammarBuilder::star(const std::string& name, const Sequence& item) {
  uint32_t rule = declare(name);
  define(rule, {item + ref(rule), {}});
  return rule;
}

std::vector<uint32_t> GrammarBuilder::up_to(const std::string& name, size_t n, const Sequence& item) {
  std::vector<uint32_t> rules{add(name, {Sequence{}})};
  for (size_t i = 0; i < n; ++i) rules.push_back(add(name, {item + ref(rules.back()), {}}));
  return rules;
}

Grammar GrammarBuilder::build(uint32_t root) {
  for (size_t r = 0; r < grammar_.rules.size(); ++r) {
    if (grammar_.rules[r].empty())
      throw std::logic_error("grammar rule '" + grammar_.names[r] + "' declared but not defined");
  }
  grammar_.root = root;
  return std::move(grammar_);
}

std::string Grammar::to_gbnf() const {
  std::string out;
  auto print_rule = [&](size_t r) {
    out += (r == root ? std::string("root") : names[r]) + " ::= ";
    for (size_t a = 0; a < rules[r].size(); ++a) {
      if (a) out += " | ";
      const Sequence& alt = rules[r][a];
      if (alt.size() == 1) out += "\"\"";
      std::string pending;  // consecutive single bytes print as one string literal
      auto flush = [&]() {
        if (!pending.empty()) out += (out.back() == ' ' ? "" : " ") + ("\"" + pending + "\"");
        pending.clear();
      };
      for (size_t i = 0; i + 1 < alt.size(); ++i) {
        const Element& e = alt[i];
        if (e.kind == Element::Kind::Bytes && e.bytes.count() == 1) {
          for (int b = 0; b < 256; ++b) {
            if (e.bytes.test(b)) pending += escape_byte(b, false);
          }
          continue;
        }
        flush();
        out += (out.back() == ' ' ? "" : " ");
        out += e.kind == Element::Kind::Rule ? (e.rule == root ? "root" : names[e.rule])
                                             : set_to_gbnf(e.bytes);
      }
      flush();
    }
    out += "\n";
  };
  print_rule(root);
  for (size_t r = 0; r < rules.size(); ++r) {
    if (r != root) print_rule(r);
  }
  return out;
}

}  // namespace sw
