// Incremental byte matcher for a Grammar: a set of parse stacks advanced one byte at a time.
//
// Each stack lists the grammar elements still to match, top last; a stack whose top is a byte
// set is "ready". An empty stack means the root has been matched completely. The matcher is a
// value: copy it to try a token without committing (that is how a candidate token is checked).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/constraint/grammar.h"

namespace sw {

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  // Consumes bytes; returns false (leaving the matcher dead) if the grammar rejects them.
  bool advance(std::string_view bytes);
  // Consumes the longest prefix of `bytes` that the grammar accepts; returns its length.
  size_t advance_prefix(std::string_view bytes);
  // Whether advance(bytes) would succeed, without changing this matcher.
  bool accepts(std::string_view bytes) const;

  bool dead() const { return stacks_.empty(); }
  const Grammar& grammar() const { return *grammar_; }
  bool can_end() const;       // the text so far is a complete sentence of the grammar
  bool can_continue() const;  // some byte may still follow
  ByteSet next_bytes() const;

  // The bytes the grammar forces from here: while exactly one byte can follow and the
  // sentence cannot end, that byte is forced. At most max_bytes.
  std::string forced_text(size_t max_bytes = 256) const;
  // The fewest bytes that complete a sentence from here (each rule by its shortest
  // alternative, each byte set by its first printable byte): "" where the text may end, and
  // where the matcher is dead.
  std::string shortest_completion() const;

 private:
  using Stack = std::vector<const Element*>;
  void expand(Stack stack, std::vector<Stack>& out) const;
  std::string complete(Stack stack, const std::vector<size_t>& shortest) const;
  bool step(unsigned char byte);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Stack> stacks_;
};

}  // namespace sw
