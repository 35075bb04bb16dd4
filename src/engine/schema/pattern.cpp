#include "engine/schema/pattern.h"

#include <bitset>
#include <limits>
#include <vector>

#include "schemaweaver/error.h"

namespace sw {
namespace {

using ByteSet = std::bitset<256>;

// The pattern as a tree; code points beyond ASCII are sequences of byte sets.
struct Node {
  enum Kind { Bytes, Begin, End, Sequence, Choice, Repeat } kind = Sequence;
  ByteSet bytes;
  std::vector<Node> parts;  // Sequence, Choice; Repeat: the one repeated
  int min = 0, max = 0;     // Repeat; max < 0: unbounded
};

constexpr int kUnbounded = -1;
constexpr int kMaxRepeat = 1000;
constexpr size_t kMaxInstructions = 200000;

Node bytes_node(const ByteSet& set) { return {Node::Bytes, set, {}, 0, 0}; }
Node sequence(std::vector<Node> parts) { return {Node::Sequence, {}, std::move(parts), 0, 0}; }
Node choice(std::vector<Node> parts) { return {Node::Choice, {}, std::move(parts), 0, 0}; }

ByteSet range(unsigned from, unsigned to) {
  ByteSet set;
  for (unsigned b = from; b <= to; ++b) set.set(b);
  return set;
}

// Any code point whose ASCII part is `ascii` (every multi-byte one is taken: the classes' members
// are ASCII).
Node any_code_point(const ByteSet& ascii) {
  const ByteSet tail = range(0x80, 0xBF);
  return choice({bytes_node(ascii), sequence({bytes_node(range(0xC2, 0xDF)), bytes_node(tail)}),
                 sequence({bytes_node(range(0xE0, 0xEF)), bytes_node(tail), bytes_node(tail)}),
                 sequence({bytes_node(range(0xF0, 0xF4)), bytes_node(tail), bytes_node(tail), bytes_node(tail)})});
}

Node literal(const std::string& utf8) {
  std::vector<Node> parts;
  for (unsigned char c : utf8) parts.push_back(bytes_node(ByteSet().set(c)));
  return sequence(std::move(parts));
}

std::string utf8(unsigned code) {
  std::string out;
  if (code < 0x80) out += char(code);
  else if (code < 0x800) out += {char(0xC0 | (code >> 6)), char(0x80 | (code & 0x3F))};
  else out += {char(0xE0 | (code >> 12)), char(0x80 | ((code >> 6) & 0x3F)), char(0x80 | (code & 0x3F))};
  return out;
}

class Parser {
 public:
  explicit Parser(const std::string& source) : s_(source) {}

  Node parse() {
    Node n = alternation();
    if (at_ < s_.size()) fail("unbalanced ')'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("pattern \"" + s_ + "\": " + what + " (at offset " + std::to_string(at_) + ")");
  }
  bool more() const { return at_ < s_.size(); }
  char peek() const { return s_[at_]; }
  bool eat(char c) {
    if (more() && peek() == c) return ++at_, true;
    return false;
  }

  Node alternation() {
    std::vector<Node> options{concatenation()};
    while (eat('|')) options.push_back(concatenation());
    return options.size() == 1 ? std::move(options[0]) : choice(std::move(options));
  }

  Node concatenation() {
    std::vector<Node> parts;
    while (more() && peek() != '|' && peek() != ')') parts.push_back(quantified(atom()));
    return sequence(std::move(parts));
  }

  int number() {
    if (!more() || !isdigit((unsigned char)peek())) fail("a count was expected");
    long n = 0;
    while (more() && isdigit((unsigned char)peek())) n = std::min<long>(n * 10 + (s_[at_++] - '0'), 1L << 30);
    if (n > kMaxRepeat) fail("a count above " + std::to_string(kMaxRepeat) + " is not supported");
    return int(n);
  }

  Node quantified(Node atom) {
    for (;;) {
      int min, max;
      if (eat('*')) min = 0, max = kUnbounded;
      else if (eat('+')) min = 1, max = kUnbounded;
      else if (eat('?')) min = 0, max = 1;
      else if (more() && peek() == '{' && at_ + 1 < s_.size() && isdigit((unsigned char)s_[at_ + 1])) {
        ++at_;
        min = max = number();
        if (eat(',')) max = more() && peek() == '}' ? kUnbounded : number();
        if (!eat('}')) fail("'}' was expected");
        if (max != kUnbounded && max < min) fail("a repeat's maximum is below its minimum");
      } else {
        return atom;
      }
      if (atom.kind == Node::Begin || atom.kind == Node::End) fail("an anchor cannot be repeated");
      eat('?');  // lazy: matches the same strings
      atom = repeated(std::move(atom), min, max);
    }
  }

  // A repeat of `atom`; a repeat of a repeat that matches the same strings as one repeat is
  // written as that one (`(x*){2,65}` is `x*`, `(x+)+` is `x+`, `(x?)*` is `x*`): stacked
  // repeats otherwise make an automaton that can be in many copies of x at once, and its
  // grammar keeps thousands of parses alive for every character.
  static Node repeated(Node atom, int min, int max) {
    if (atom.kind == Node::Repeat && max != 0) {
      const bool star = atom.min == 0 && atom.max == kUnbounded, plus = atom.min == 1 && atom.max == kUnbounded,
                 optional = atom.min == 0 && atom.max == 1;
      if (star || (optional && max == kUnbounded)) return {Node::Repeat, {}, {std::move(atom.parts[0])}, 0, kUnbounded};
      if (plus) return {Node::Repeat, {}, {std::move(atom.parts[0])}, min, kUnbounded};
    }
    return {Node::Repeat, {}, {std::move(atom)}, min, max};
  }

  Node atom() {
    char c = s_[at_++];
    switch (c) {
      case '^': return {Node::Begin, {}, {}, 0, 0};
      case '$': return {Node::End, {}, {}, 0, 0};
      case '.': return any_code_point(range(0, 0x7F).reset('\n').reset('\r'));
      case '[': return char_class();
      case '\\': return escape_atom();
      case '(': return group();
      case '*': case '+': case '?': fail(std::string("nothing to repeat before '") + c + "'");
      case '{': return literal("{");
      default: return literal(std::string(1, c));
    }
  }

  Node group() {
    if (eat('?')) {
      if (eat(':')) {
      } else if (more() && peek() == '<' && at_ + 1 < s_.size() && s_[at_ + 1] != '=' && s_[at_ + 1] != '!') {
        while (more() && peek() != '>') ++at_;  // a named group: the name does not matter here
        if (!eat('>')) fail("a group name is not closed");
      } else {
        fail("lookaround ((?=, (?!, (?<=, (?<!) is not supported");
      }
    }
    Node inner = alternation();
    if (!eat(')')) fail("'(' is not closed");
    return inner;
  }

  // \d \w \s and their negations as ASCII sets (negated: false).
  static bool class_escape(char c, ByteSet& set, bool& negated) {
    const ByteSet digits = range('0', '9');
    ByteSet word = range('a', 'z') | range('A', 'Z') | digits;
    word.set('_');
    ByteSet space;
    for (char w : {' ', '\t', '\n', '\r', '\v', '\f'}) space.set((unsigned char)w);
    negated = c == 'D' || c == 'W' || c == 'S';
    switch (c) {
      case 'd': case 'D': set = digits; return true;
      case 'w': case 'W': set = word; return true;
      case 's': case 'S': set = space; return true;
      default: return false;
    }
  }

  // The code point an escape stands for (\n, \u00e9, \.); fails on what the subset lacks.
  unsigned escaped_code_point(char c) {
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return 0;
      case 'u': case 'x': {
        const size_t digits = c == 'u' ? 4 : 2;
        if (at_ + digits > s_.size()) fail("a \\" + std::string(1, c) + " escape needs " + std::to_string(digits) + " hex digits");
        unsigned code = 0;
        for (size_t i = 0; i < digits; ++i) {
          char h = s_[at_++];
          if (!isxdigit((unsigned char)h)) fail("a \\" + std::string(1, c) + " escape needs hex digits");
          code = code * 16 + unsigned(isdigit((unsigned char)h) ? h - '0' : (tolower(h) - 'a' + 10));
        }
        return code;
      }
      case 'b': case 'B': fail("word boundaries (\\b, \\B) are not supported");
      case 'p': case 'P': fail("Unicode property classes (\\p, \\P) are not supported");
      case 'k': fail("backreferences are not supported");
      default:
        if (isdigit((unsigned char)c)) fail("backreferences are not supported");
        if (isalnum((unsigned char)c)) fail(std::string("the escape \\") + c + " is not supported");
        return (unsigned char)c;  // an escaped punctuation character stands for itself
    }
  }

  Node escape_atom() {
    if (!more()) fail("the pattern ends in '\\'");
    char c = s_[at_++];
    ByteSet set;
    bool negated;
    if (class_escape(c, set, negated)) return negated ? any_code_point(range(0, 0x7F) & ~set) : bytes_node(set);
    return literal(utf8(escaped_code_point(c)));
  }

  // One member of a class as an ASCII code point, or a class escape merged into `set`.
  bool class_member(ByteSet& set, unsigned& code) {
    char c = s_[at_++];
    if (c == '\\') {
      if (!more()) fail("the pattern ends in '\\'");
      char e = s_[at_++];
      ByteSet escaped;
      bool negated;
      if (class_escape(e, escaped, negated)) {
        if (negated) fail("a negated class escape inside [...] is not supported");
        set |= escaped;
        return false;
      }
      code = e == 'b' ? '\b' : escaped_code_point(e);
    } else {
      code = (unsigned char)c;
    }
    if (code >= 0x80) fail("a character class with members beyond ASCII is not supported");
    return true;
  }

  Node char_class() {
    const bool negated = eat('^');
    ByteSet set;
    bool first = true;
    while (more() && (peek() != ']' || first)) {
      first = false;
      unsigned from;
      if (!class_member(set, from)) continue;
      if (more() && peek() == '-' && at_ + 1 < s_.size() && s_[at_ + 1] != ']') {
        ++at_;
        unsigned to;
        if (!class_member(set, to)) fail("a range cannot end in a class escape");
        if (to < from) fail("a class range runs backwards");
        set |= range(from, to);
      } else {
        set.set(from);
      }
    }
    if (!eat(']')) fail("'[' is not closed");
    return negated ? any_code_point(range(0, 0x7F) & ~set) : bytes_node(set);
  }

  const std::string& s_;
  size_t at_ = 0;
};

}  // namespace

// A Thompson automaton: each instruction reads a byte, branches, or asserts a position.
struct Pattern::Program {
  std::vector<Instruction> code;

  size_t emit(Instruction::Op op, const ByteSet& bytes = {}) {
    if (code.size() >= kMaxInstructions) throw Error("pattern: too large once its repeats are counted out");
    code.push_back({op, bytes, 0, 0});
    return code.size() - 1;
  }

  // An instruction that goes on to the one after it.
  void step(Instruction::Op op, const ByteSet& bytes = {}) {
    const size_t at = emit(op, bytes);
    code[at].next = at + 1;
  }

  void compile(const Node& n) {
    switch (n.kind) {
      case Node::Bytes: step(Instruction::Byte, n.bytes); break;
      case Node::Begin: step(Instruction::Begin); break;
      case Node::End: step(Instruction::End); break;
      case Node::Sequence:
        for (const Node& part : n.parts) compile(part);
        break;
      case Node::Choice: {
        std::vector<size_t> jumps;
        for (size_t i = 0; i < n.parts.size(); ++i) {
          const bool last = i + 1 == n.parts.size();
          const size_t split = last ? 0 : emit(Instruction::Split);
          if (!last) code[split].next = code.size();
          compile(n.parts[i]);
          if (!last) {
            jumps.push_back(emit(Instruction::Jump));
            code[split].other = code.size();
          }
        }
        for (size_t j : jumps) code[j].next = code.size();
        break;
      }
      case Node::Repeat: {
        const Node& body = n.parts[0];
        if (n.max == kUnbounded && n.min > 0) {
          // The last required copy loops back on itself: `x+` is one copy of x, not two, so
          // repeats nested in repeats grow the program by a sum, not a product.
          for (int i = 1; i < n.min; ++i) compile(body);
          const size_t start = code.size();
          compile(body);
          const size_t loop = emit(Instruction::Split);
          code[loop].next = start;
          code[loop].other = code.size();
          break;
        }
        for (int i = 0; i < n.min; ++i) compile(body);
        if (n.max == kUnbounded) {
          size_t loop = emit(Instruction::Split);
          code[loop].next = code.size();
          compile(body);
          const size_t back = emit(Instruction::Jump);
          code[back].next = loop;
          code[loop].other = code.size();
        } else {
          std::vector<size_t> skips;
          for (int i = n.min; i < n.max; ++i) {
            size_t split = emit(Instruction::Split);
            skips.push_back(split);
            code[split].next = code.size();
            compile(body);
          }
          for (size_t s : skips) code[s].other = code.size();
        }
        break;
      }
    }
  }

  // Adds `pc` and what it reaches without reading a byte to `states`, at `pos` of a text of
  // `size` bytes; `seen` marks what this step holds already.
  bool add(std::vector<size_t>& states, std::vector<char>& seen, size_t pc, size_t pos, size_t size) const {
    std::vector<size_t> stack{pc};
    while (!stack.empty()) {
      size_t at = stack.back();
      stack.pop_back();
      if (seen[at]) continue;
      seen[at] = 1;
      const Instruction& in = code[at];
      switch (in.op) {
        case Instruction::Match: return true;
        case Instruction::Byte: states.push_back(at); break;
        case Instruction::Jump: stack.push_back(in.next); break;
        case Instruction::Split: stack.push_back(in.other), stack.push_back(in.next); break;
        case Instruction::Begin: if (pos == 0) stack.push_back(in.next); break;
        case Instruction::End: if (pos == size) stack.push_back(in.next); break;
      }
    }
    return false;
  }
};

Pattern::Pattern(const std::string& source) : program_(std::make_unique<Program>()) {
  program_->compile(Parser(source).parse());
  program_->emit(Instruction::Match);
}

Pattern::~Pattern() = default;
Pattern::Pattern(Pattern&&) noexcept = default;
Pattern& Pattern::operator=(Pattern&&) noexcept = default;

const std::vector<Pattern::Instruction>& Pattern::instructions() const { return program_->code; }

bool Pattern::search(const std::string& text) const {
  const Program& p = *program_;
  std::vector<size_t> states, next;
  std::vector<char> seen(p.code.size(), 0);
  for (size_t pos = 0;; ++pos) {
    // A match may start at any position (the pattern is searched for, not anchored).
    if (p.add(states, seen, 0, pos, text.size())) return true;
    if (pos == text.size()) return false;
    std::fill(seen.begin(), seen.end(), 0);
    next.clear();
    const unsigned char byte = (unsigned char)text[pos];
    for (size_t at : states) {
      if (p.code[at].bytes.test(byte) && p.add(next, seen, p.code[at].next, pos + 1, text.size())) return true;
    }
    std::swap(states, next);
  }
}

}  // namespace sw
