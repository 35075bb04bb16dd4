// JSON Schema `pattern`: an ECMA-262 regular expression, searched for anywhere in the string.
// Compiled to a byte automaton and run by simulating every state at once, so a match takes time
// linear in the text whatever the pattern (a backtracking matcher such as std::regex takes
// exponential time on patterns like "^(a+)+b$", which any client can send). The subset: literals,
// `.`, classes with ranges and negation (ASCII members), \d \w \s and their negations, anchors
// ^ $, groups (capturing, (?:...) and named), alternation, and the quantifiers * + ? {n} {n,}
// {n,m} (lazy or not: the same strings match). Backreferences, lookaround and word boundaries
// are refused with the construct named.
#pragma once

#include <memory>
#include <string>

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

 private:
  struct Program;
  std::unique_ptr<Program> program_;
};

}  // namespace sw
