#include "engine/constraint/matcher.h"

#include <algorithm>

namespace sw {

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  Element root;
  root.kind = Element::Kind::Rule;
  root.rule = grammar_->root;
  // Nothing refers to the root, so its alternatives are expanded directly.
  for (const Sequence& alt : grammar_->rules[grammar_->root]) {
    Stack stack;
    if (alt.front().kind != Element::Kind::End) stack.push_back(&alt.front());
    expand(std::move(stack), stacks_);
  }
}

// Replaces a stack whose top is a rule reference by one stack per alternative of that rule,
// recursively, until every resulting stack is ready (top is a byte set) or empty.
void Matcher::expand(Stack stack, std::vector<Stack>& out) const {
  if (stack.empty() || stack.back()->kind == Element::Kind::Bytes) {
    out.push_back(std::move(stack));
    return;
  }
  const Element* ref = stack.back();
  stack.pop_back();
  const Element* after = ref + 1;
  if (after->kind != Element::Kind::End) stack.push_back(after);
  for (const Sequence& alt : grammar_->rules[ref->rule]) {
    Stack next = stack;
    if (alt.front().kind != Element::Kind::End) next.push_back(&alt.front());
    expand(std::move(next), out);
  }
}

bool Matcher::step(unsigned char byte) {
  std::vector<Stack> next;
  for (const Stack& stack : stacks_) {
    if (stack.empty() || !stack.back()->bytes.test(byte)) continue;
    Stack rest = stack;
    const Element* matched = rest.back();
    rest.pop_back();
    if ((matched + 1)->kind != Element::Kind::End) rest.push_back(matched + 1);
    expand(std::move(rest), next);
  }
  // Alternatives that converge (e.g. after a shared prefix) would multiply otherwise.
  std::sort(next.begin(), next.end());
  next.erase(std::unique(next.begin(), next.end()), next.end());
  stacks_ = std::move(next);
  return !stacks_.empty();
}

bool Matcher::advance(std::string_view bytes) {
  for (unsigned char c : bytes) {
    if (!step(c)) return false;
  }
  return true;
}

size_t Matcher::advance_prefix(std::string_view bytes) {
  size_t used = 0;
  while (used < bytes.size() && next_bytes().test((unsigned char)bytes[used])) step((unsigned char)bytes[used++]);
  return used;
}

bool Matcher::accepts(std::string_view bytes) const {
  if (bytes.empty()) return !dead();
  if (!next_bytes().test((unsigned char)bytes.front())) return false;  // cheap common reject
  Matcher copy = *this;
  return copy.advance(bytes);
}

bool Matcher::can_end() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

bool Matcher::can_continue() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return !s.empty(); });
}

ByteSet Matcher::next_bytes() const {
  ByteSet set;
  for (const Stack& stack : stacks_) {
    if (!stack.empty()) set |= stack.back()->bytes;
  }
  return set;
}

std::string Matcher::forced_text(size_t max_bytes) const {
  std::string forced;
  Matcher probe = *this;
  while (forced.size() < max_bytes && !probe.can_end()) {
    ByteSet next = probe.next_bytes();
    if (next.count() != 1) break;
    int byte = 0;
    while (!next.test(size_t(byte))) ++byte;
    forced += char(byte);
    probe.step((unsigned char)byte);
  }
  return forced;
}

}  // namespace sw
