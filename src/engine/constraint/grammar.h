// A byte-level context-free grammar, built in code and matched by Matcher (matcher.h).
//
// Rules are lists of alternatives; an alternative is a sequence of elements ending in End.
// An element matches one byte from a set, or refers to another rule. Repetition is written as
// right recursion (R ::= x R | empty), which the matcher handles without growing its stacks.
// Left recursion is not allowed (the builder's callers never produce it).
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace sw {

using ByteSet = std::bitset<256>;

struct Element {
  enum class Kind : uint8_t { Bytes, Rule, End };
  Kind kind = Kind::End;
  uint32_t rule = 0;  // Rule: index into Grammar::rules
  ByteSet bytes;      // Bytes: the accepted bytes
};

using Sequence = std::vector<Element>;

struct Grammar {
  std::vector<std::string> names;               // rule names, for printing
  std::vector<std::vector<Sequence>> rules;     // rule -> alternatives (each ends in End)
  uint32_t root = 0;
  // A turn of calls whose sentence may end after a call and also go on into another (its
  // separator extends its closer: </tool_call>\n<tool_call>): the text that opens the next
  // call (its marker, else its name's opening). Up to it, whether the turn goes on is the model's
  // own choice (decoder.cpp's GrammarStrategy); "" where the grammar has no such point.
  std::string next_call_opening;

  // GBNF text (llama.cpp's grammar syntax), for inspection and tests.
  std::string to_gbnf() const;
};

// Builds a Grammar. Sequences are composed with the helpers below and operator+.
class GrammarBuilder {
 public:
  static Sequence literal(std::string_view text);
  static Sequence bytes(const ByteSet& set);
  static Sequence byte_range(uint8_t first, uint8_t last);
  Sequence ref(uint32_t rule) const;

  // Declares a rule to be defined later (for recursion); names are made unique.
  uint32_t declare(const std::string& name);
  void define(uint32_t rule, std::vector<Sequence> alternatives);
  uint32_t add(const std::string& name, std::vector<Sequence> alternatives);
  // R ::= item R | empty  (zero or more)
  uint32_t star(const std::string& name, const Sequence& item);
  // The rules of up to 0, 1, ..., n items: R_k ::= item R_{k-1} | empty.
  std::vector<uint32_t> up_to(const std::string& name, size_t n, const Sequence& item);
  // Up to n items (the last of up_to).
  uint32_t at_most(const std::string& name, size_t n, const Sequence& item) { return up_to(name, n, item).back(); }

  Grammar build(uint32_t root);

 private:
  Grammar grammar_;
  std::unordered_set<std::string> names_;  // taken, for unique names in constant time
  std::unordered_map<std::string, int> last_suffix_;  // per name, the last "-n" it was given
};

Sequence operator+(Sequence a, const Sequence& b);

}  // namespace sw
