#include "engine/toolset/value_rules.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

#include "engine/schema/pattern.h"
#include "engine/schema/schema.h"

namespace sw {
namespace {

using G = GrammarBuilder;

ByteSet byte_span(int first, int last) {
  ByteSet set;
  for (int b = first; b <= last; ++b) set.set(size_t(b));
  return set;
}

// The JSON text of one decoded string byte: raw where JSON allows it (printable ASCII but the
// quote and the backslash, every byte of a UTF-8 sequence), else its escape.
std::string escaped_byte(int byte) {
  switch (byte) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
  }
  static const char* hex = "0123456789abcdef";
  return std::string("\\u00") + hex[byte >> 4] + hex[byte & 15];
}

ByteSet raw_bytes() {
  ByteSet set = byte_span(0x20, 0xFF);
  set.reset('"');
  set.reset('\\');
  return set;
}

// The bytes a raw string (a tagged syntax's, ended by `end`) holds as they are: the printable
// ones and the tab, but the end marker's first byte, so the marker cannot begin inside the string.
ByteSet raw_text_bytes(const std::string& end) {
  ByteSet set = byte_span(0x20, 0xFF);
  set.set('\t');
  set.reset((unsigned char)end.front());
  return set;
}

// One character of a raw string, as one count: an ASCII byte of raw_text_bytes or a UTF-8 sequence.
uint32_t counted_raw_char(GrammarBuilder& b, const std::string& end) {
  const ByteSet tail = byte_span(0x80, 0xBF);
  return b.add("raw-char-counted",
               {G::bytes(raw_text_bytes(end) & byte_span(0x00, 0x7F)), G::bytes(byte_span(0xC2, 0xDF)) + G::bytes(tail),
                G::bytes(byte_span(0xE0, 0xEF)) + G::bytes(tail) + G::bytes(tail),
                G::bytes(byte_span(0xF0, 0xF4)) + G::bytes(tail) + G::bytes(tail) + G::bytes(tail)});
}

// One character of a JSON string, as one count: a printable ASCII byte, a UTF-8 sequence, or an
// escape (not of a UTF-16 surrogate, whose pair would count as two).
uint32_t counted_char(GrammarBuilder& b) {
  const ByteSet tail = byte_span(0x80, 0xBF);
  ByteSet hex, not_d, simple;
  for (const char* c = "0123456789abcdefABCDEF"; *c; ++c) hex.set((unsigned char)*c);
  not_d = hex;
  not_d.reset('d').reset('D');
  for (const char* c = "\"\\/bfnrt"; *c; ++c) simple.set((unsigned char)*c);
  return b.add("char-counted",
               {G::bytes(raw_bytes() & byte_span(0x20, 0x7F)), G::bytes(byte_span(0xC2, 0xDF)) + G::bytes(tail),
                G::bytes(byte_span(0xE0, 0xEF)) + G::bytes(tail) + G::bytes(tail),
                G::bytes(byte_span(0xF0, 0xF4)) + G::bytes(tail) + G::bytes(tail) + G::bytes(tail),
                G::literal("\\") + G::bytes(simple),
                G::literal("\\u") + G::bytes(not_d) + G::bytes(hex) + G::bytes(hex) + G::bytes(hex),
                G::literal("\\u") + G::bytes(byte_span('d', 'd') | byte_span('D', 'D')) + G::byte_range('0', '7') +
                    G::bytes(hex) + G::bytes(hex)});
}

// The string's content as an automaton product, explored from its start and emitted as one
// rule per state that can still reach the closing quote:
//   Start, Search(k)   before the pattern's match begins (any character may come first);
//   Closure(pc, k)     the pattern's states reachable from instruction pc without reading;
//   Byte(pc, k)        about to read instruction pc's byte;
//   Done(k)            the pattern has matched; any characters may follow;
// where k counts the characters so far (capped at maxLength, or at minLength when there is no
// maximum), so the closing quote is offered only within the lengths.
class StringProduct {
 public:
  // `raw_end`: the string is raw, ended by this marker ("": a JSON string in quotes).
  StringProduct(GrammarBuilder& b, const Schema& schema, const std::string& raw_end) : b_(b), raw_end_(raw_end) {
    const std::string source = string_pattern(schema);
    if (!source.empty()) pattern_.emplace(source);
    min_ = schema.checks.value("minLength", 0);
    if (schema.checks.contains("maxLength")) max_ = schema.checks["maxLength"].get<int>();
    char_ = b_.ref(raw() ? counted_raw_char(b_, raw_end_) : counted_char(b_));
  }

  Sequence build() {
    // Without a pattern the string is free from its start.
    const int start = node({pattern_ ? Kind::Start : Kind::Done, 0, 0});
    for (size_t i = 0; i < keys_.size(); ++i) expand(i);
    mark_productive();
    if (!productive_[size_t(start)]) throw Error("no string fits the schema's pattern and lengths");
    std::vector<uint32_t> rules(keys_.size());
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (productive_[i]) rules[i] = b_.declare("string-state");
    }
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (!productive_[i]) continue;
      std::vector<Sequence> alternatives;
      for (const Edge& e : edges_[i]) {
        if (productive_[size_t(e.target)]) alternatives.push_back(e.text + b_.ref(rules[size_t(e.target)]));
      }
      if (accepts_[i]) alternatives.push_back(G::literal(raw() ? raw_end_ : "\""));
      b_.define(rules[i], std::move(alternatives));
    }
    return G::literal(raw() ? "" : "\"") + b_.ref(rules[size_t(start)]);
  }

 private:
  bool raw() const { return !raw_end_.empty(); }

  enum class Kind { Start, Search, Closure, Byte, Done };
  using Key = std::tuple<Kind, size_t, int>;  // kind, instruction, characters so far
  struct Edge {
    Sequence text;  // what the edge writes
    int target;
  };
  static constexpr size_t kMaxStates = 50000;
  static constexpr size_t kMaxClosureSteps = 20000000;

  int node(const Key& key) {
    auto found = index_.find(key);
    if (found != index_.end()) return found->second;
    if (keys_.size() >= kMaxStates)
      throw Error("the pattern and the lengths together need more than 50000 grammar states");
    index_[key] = int(keys_.size());
    keys_.push_back(key);
    edges_.emplace_back();
    accepts_.push_back(false);
    return int(keys_.size() - 1);
  }

  // The count after one more character; nullopt beyond maxLength.
  std::optional<int> counted(int k) const {
    if (max_) return k + 1 <= *max_ ? std::optional<int>(k + 1) : std::nullopt;
    return std::min(k + 1, min_);
  }
  bool may_end(int k) const { return k >= min_; }

  void edge(size_t from, Sequence text, const Key& to) {
    const int target = node(to);
    edges_[from].push_back({std::move(text), target});
  }

  // Any one character, then `next` with the count raised.
  void any_char(size_t from, Kind next, int k) {
    if (auto after = counted(k)) edge(from, char_, {next, 0, *after});
  }

  void expand(size_t i) {
    const auto [kind, pc, k] = keys_[i];
    switch (kind) {
      case Kind::Start:
        close(i, 0, k, true);
        any_char(i, Kind::Search, k);
        break;
      case Kind::Search:
        close(i, 0, k, false);
        any_char(i, Kind::Search, k);
        break;
      case Kind::Closure:
        close(i, pc, k, false);
        break;
      case Kind::Byte:
        read_byte(i, pc, k);
        break;
      case Kind::Done:
        accepts_[i] = may_end(k);
        any_char(i, Kind::Done, k);
        break;
    }
  }

  // The edges of the pattern's states reachable from `pc` without reading a byte: each byte
  // instruction, the match (the rest is free), or a match at the end (only the quote may follow).
  // Each call marks what it visits with a stamp of its own (no clearing per state), and all
  // calls together may visit kMaxClosureSteps instructions: a pattern whose automaton is large
  // and mostly branches (nested repeats) is refused in bounded time instead of building for
  // minutes.
  void close(size_t from, size_t pc, int k, bool at_start) {
    const std::vector<Pattern::Instruction>& code = pattern_->instructions();
    if (seen_.size() != code.size() * 2) seen_.assign(code.size() * 2, 0);
    ++stamp_;
    std::vector<std::pair<size_t, bool>> stack{{pc, false}};  // instruction, past an end anchor
    while (!stack.empty()) {
      auto [at, at_end] = stack.back();
      stack.pop_back();
      if (seen_[at * 2 + at_end] == stamp_) continue;
      seen_[at * 2 + at_end] = stamp_;
      if (++closure_steps_ > kMaxClosureSteps)
        throw Error("the pattern is too complex to enforce: its automaton branches too much (nested repeats?)");
      const Pattern::Instruction& in = code[at];
      switch (in.op) {
        case Pattern::Instruction::Byte:
          if (!at_end) edge(from, {}, {Kind::Byte, at, k});
          break;
        case Pattern::Instruction::Match:
          if (at_end) accepts_[from] = accepts_[from] || may_end(k);
          else edge(from, {}, {Kind::Done, 0, k});
          break;
        case Pattern::Instruction::Split: stack.push_back({in.other, at_end}), stack.push_back({in.next, at_end}); break;
        case Pattern::Instruction::Jump: stack.push_back({in.next, at_end}); break;
        case Pattern::Instruction::Begin: if (at_start) stack.push_back({in.next, at_end}); break;
        case Pattern::Instruction::End: stack.push_back({in.next, true}); break;
      }
    }
  }

  // One decoded byte of instruction pc's set, in its JSON spelling. A byte that begins a
  // character counts it; a UTF-8 continuation byte does not.
  void read_byte(size_t from, size_t pc, int k) {
    const Pattern::Instruction& in = pattern_->instructions()[pc];
    const ByteSet continuation = byte_span(0x80, 0xBF);
    const ByteSet as_is = raw() ? raw_text_bytes(raw_end_) : raw_bytes();
    const ByteSet raw_start = in.bytes & as_is & ~continuation;
    const ByteSet raw_continuation = in.bytes & continuation;
    if (raw_continuation.any()) edge(from, G::bytes(raw_continuation), {Kind::Closure, in.next, k});
    auto after = counted(k);
    if (!after) return;
    if (raw_start.any()) edge(from, G::bytes(raw_start), {Kind::Closure, in.next, *after});
    for (int byte = 0; byte < 0x80 && !raw(); ++byte) {
      if (in.bytes.test(size_t(byte)) && !raw_bytes().test(size_t(byte)))
        edge(from, G::literal(escaped_byte(byte)), {Kind::Closure, in.next, *after});
    }
  }

  // States from which the closing quote can still be reached; the others are left out of the
  // grammar, so that no text it accepts leads where the string cannot end.
  void mark_productive() {
    productive_.assign(keys_.size(), false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = keys_.size(); i-- > 0;) {
        if (productive_[i]) continue;
        bool reaches = accepts_[i];
        for (const Edge& e : edges_[i]) reaches = reaches || productive_[size_t(e.target)];
        if (reaches) productive_[i] = true, changed = true;
      }
    }
  }

  GrammarBuilder& b_;
  const std::string raw_end_;
  std::optional<Pattern> pattern_;
  int min_ = 0;
  std::optional<int> max_;
  Sequence char_;
  std::map<Key, int> index_;
  std::vector<Key> keys_;
  std::vector<std::vector<Edge>> edges_;
  std::vector<bool> accepts_, productive_;
  std::vector<uint32_t> seen_;  // close()'s marks: the stamp of the call that saw the instruction
  uint32_t stamp_ = 0;
  size_t closure_steps_ = 0;
};

class NumberRules {
 public:
  explicit NumberRules(GrammarBuilder& b) : b_(b) {}

  // Any `n` digits.
  static Sequence any_digits(size_t n) {
    Sequence out;
    for (size_t i = 0; i < n; ++i) out = out + G::byte_range('0', '9');
    return out;
  }

  // The integers from `low` to `high` (both of `low`'s length, no leading zeros but in `low`
  // itself), as the digits that spell them.
  Sequence same_length(const std::string& low, const std::string& high) {
    if (low.empty()) return {};
    if (low == high) return G::literal(low);
    const std::string low_rest = low.substr(1), high_rest = high.substr(1);
    if (low[0] == high[0]) return G::literal(low.substr(0, 1)) + same_length(low_rest, high_rest);
    if (low_rest == std::string(low_rest.size(), '0') && high_rest == std::string(high_rest.size(), '9'))
      return G::byte_range(uint8_t(low[0]), uint8_t(high[0])) + any_digits(low_rest.size());
    std::vector<Sequence> options{G::literal(low.substr(0, 1)) + same_length(low_rest, std::string(low_rest.size(), '9'))};
    if (high[0] - low[0] > 1)
      options.push_back(G::byte_range(uint8_t(low[0] + 1), uint8_t(high[0] - 1)) + any_digits(low_rest.size()));
    options.push_back(G::literal(high.substr(0, 1)) + same_length(std::string(high_rest.size(), '0'), high_rest));
    return b_.ref(b_.add("digits", std::move(options)));
  }

  // The integers from `low` to `high` (none: no upper end), low >= 0, as their digits.
  std::vector<Sequence> between(long long low, std::optional<long long> high) {
    std::vector<Sequence> options;
    const std::string low_digits = std::to_string(low);
    const size_t longest = high ? std::to_string(*high).size() : low_digits.size();
    for (size_t length = low_digits.size(); length <= longest; ++length) {
      const std::string from = length == low_digits.size() ? low_digits : "1" + std::string(length - 1, '0');
      const std::string to = high && length == longest ? std::to_string(*high) : std::string(length, '9');
      options.push_back(same_length(from, to));
    }
    if (!high && low_digits.size() < kMaxNumberDigits)  // every longer integer, up to kMaxNumberDigits digits
      options.push_back(G::byte_range('1', '9') + any_digits(low_digits.size()) +
                        b_.ref(b_.at_most("more-digits", kMaxNumberDigits - low_digits.size() - 1, G::byte_range('0', '9'))));
    return options;
  }

  // A magnitude m = I[.F] >= 0 with low < m (or <=) and m < high (or <=); a fraction only where
  // `fractions` (numbers; integers have none).
  struct End {
    long long value;
    bool inclusive;
  };
  std::vector<Sequence> magnitude(End low, std::optional<End> high, bool fractions) {
    std::vector<Sequence> options;
    auto add = [&](std::vector<Sequence> integer_parts, const Sequence& fraction) {
      if (integer_parts.empty()) return;
      Sequence integer = integer_parts.size() == 1 ? integer_parts[0] : b_.ref(b_.add("int-part", integer_parts));
      options.push_back(integer + fraction);
    };
    const Sequence any = fractions ? b_.ref(optional_fraction("[0-9]")) : Sequence{};
    const Sequence zero = fractions ? b_.ref(optional_fraction("0")) : Sequence{};
    if (high && high->value == low.value) {
      if (low.inclusive && high->inclusive) add({G::literal(std::to_string(low.value))}, zero);
      return options;
    }
    // The lower end's integer part: any fraction if it is included, else one that is not zero.
    if (low.inclusive) add({G::literal(std::to_string(low.value))}, any);
    else if (fractions) add({G::literal(std::to_string(low.value))}, nonzero_fraction());
    // Strictly between.
    if (!high || high->value - low.value > 1)
      add(between(low.value + 1, high ? std::optional<long long>(high->value - 1) : std::nullopt), any);
    // The upper end's integer part, with a zero fraction only.
    if (high && high->inclusive) add({G::literal(std::to_string(high->value))}, zero);
    return options;
  }

 private:
  // ("." digits)? with every digit from `digit` ("0": zeros only), kMaxNumberDigits at most.
  uint32_t optional_fraction(const std::string& digit) {
    const Sequence d = digit == "0" ? G::literal("0") : G::byte_range('0', '9');
    return b_.add("fraction", {G::literal(".") + d + b_.ref(b_.at_most("fraction-digits", kMaxNumberDigits - 1, d)), {}});
  }
  // "." and up to kMaxNumberDigits digits, one of them not zero.
  Sequence nonzero_fraction() {
    const Sequence nonzero = G::byte_range('1', '9');
    const std::vector<uint32_t> any = b_.up_to("fraction-digits", kMaxNumberDigits - 1, G::byte_range('0', '9'));
    uint32_t rule = b_.add("nonzero-digits", {nonzero});  // n digits at most, by induction on n
    for (size_t n = 2; n <= kMaxNumberDigits; ++n)
      rule = b_.add("nonzero-digits", {nonzero + b_.ref(any[n - 1]), G::literal("0") + b_.ref(rule)});
    return G::literal(".") + b_.ref(rule);
  }

  GrammarBuilder& b_;
};

// A bound as the schema gives it, or none.
struct Bound {
  double value;
  bool inclusive;
};

// The stricter of the schema's inclusive and exclusive bound on one side (`lower`: minimum and
// exclusiveMinimum; else maximum and exclusiveMaximum), or none.
std::optional<Bound> bound(const Json& c, bool lower) {
  const char* inclusive = lower ? "minimum" : "maximum";
  const char* exclusive = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  std::optional<Bound> found;
  if (c.contains(inclusive)) found = Bound{c[inclusive].get<double>(), true};
  if (c.contains(exclusive)) {
    const double v = c[exclusive].get<double>();
    if (!found || (lower ? v >= found->value : v <= found->value)) found = Bound{v, false};
  }
  return found;
}

}  // namespace

bool has_string_keywords(const Schema& schema) {
  const Json& c = schema.checks;
  return c.contains("minLength") || c.contains("maxLength") || !string_pattern(schema).empty();
}

bool has_number_keywords(const Schema& schema) {
  const Json& c = schema.checks;
  return c.contains("minimum") || c.contains("maximum") || c.contains("exclusiveMinimum") ||
         c.contains("exclusiveMaximum");
}

Sequence string_value(GrammarBuilder& b, const Schema& schema, const std::string& raw_end) {
  return StringProduct(b, schema, raw_end).build();
}

Sequence number_value(GrammarBuilder& b, const Schema& schema) {
  std::optional<Bound> low = bound(schema.checks, true), high = bound(schema.checks, false);
  const bool integer = schema.type == Type::Integer;
  if (integer) {  // integers: inclusive whole bounds
    if (low) low = Bound{low->inclusive ? std::ceil(low->value) : std::floor(low->value) + 1, true};
    if (high) high = Bound{high->inclusive ? std::floor(high->value) : std::ceil(high->value) - 1, true};
  }
  if (low && high && (low->value > high->value || (low->value == high->value && !(low->inclusive && high->inclusive))))
    throw Error("no " + std::string(integer ? "integer" : "number") + " lies within the bounds");
  NumberRules rules(b);
  using End = NumberRules::End;
  std::vector<Sequence> options;
  // v >= 0: its magnitude from max(low, 0) up to high.
  if (!high || high->value >= 0) {
    End from = low && low->value >= 0 ? End{(long long)low->value, low->inclusive} : End{0, true};
    std::optional<End> to;
    if (high) to = End{(long long)high->value, high->inclusive};
    for (Sequence& s : rules.magnitude(from, to, !integer)) options.push_back(s);
  }
  // v < 0: "-" and its magnitude, above max(-high, 0) (0 itself is written without the sign)
  // and up to -low.
  if (!low || low->value < 0) {
    End from = high && high->value < 0 ? End{(long long)-high->value, high->inclusive} : End{0, false};
    std::optional<End> to;
    if (low) to = End{(long long)-low->value, low->inclusive};
    for (Sequence& s : rules.magnitude(from, to, !integer)) options.push_back(G::literal("-") + s);
  }
  if (options.empty()) throw Error("no value lies within the bounds");
  return b.ref(b.add(integer ? "bounded-integer" : "bounded-number", std::move(options)));
}

}  // namespace sw
