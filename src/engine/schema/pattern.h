// JSON Schema `pattern`: an ECMA-262 regular expression, searched for anywhere in the string.
// Compiled to a byte automaton and run by simulating every state at once, so a match takes time
// linear in the text whatever the pattern (a backtracking matcher such as std::regex takes
// exponential time on patterns like "^(a+)+b$", which any client can send). The subset: literals,
// `.`, classes with ranges and negation (ASCII members), \d \w \s and their negations, anchors
// ^ $, groups (capturing, (?:...) and named), alternation, and the quantifiers * + ? {n} {n,}
// {n,m} (lazy or not: the same strings match). Backreferences, lookaround and word boundaries
// are refused with the construct named.
#pragma once

#include <bitset>
#include <memory>
#include <string>
#include <vector>

namespace sw {

class Pattern {
 public:
  // Throws Error naming what the subset cannot express, or where the pattern is malformed.
  explicit Pattern(const std::string& source);
  ~Pattern();
  Pattern(Pattern&&) noexcept;
  Pattern& operator=(Pattern&&) noexcept;
  // Whether the pattern matches somewhere in `text` (UTF-8).
  bool search(const std::string& text) const;

  // The automaton, for a grammar that writes only matching strings (toolset/string_rules.h).
  // Instruction 0 is the start; a search may begin at any byte position.
  struct Instruction {
    enum Op { Byte, Split, Jump, Begin, End, Match } op;
    std::bitset<256> bytes;      // Byte: the bytes it reads
    size_t next = 0, other = 0;  // Split: both; Byte, Jump, Begin, End: next
  };
  const std::vector<Instruction>& instructions() const;

 private:
  struct Program;
  std::unique_ptr<Program> program_;
};

}  // namespace sw
