#include "engine/constraint/matcher.h"

#include <algorithm>
#include <limits>
#include <optional>

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

namespace {

constexpr size_t kUnbounded = std::numeric_limits<size_t>::max() / 4;

// The fewest bytes each rule of `grammar` matches: Bellman-Ford over the rules, each
// alternative's length the sum of its elements' (a byte set is one byte).
std::vector<size_t> shortest_rules(const Grammar& grammar) {
  std::vector<size_t> shortest(grammar.rules.size(), kUnbounded);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < grammar.rules.size(); ++r) {
      for (const Sequence& alternative : grammar.rules[r]) {
        size_t length = 0;
        for (const Element& e : alternative) {
          if (e.kind == Element::Kind::Bytes) length += 1;
          if (e.kind == Element::Kind::Rule) length = std::min(kUnbounded, length + shortest[e.rule]);
        }
        if (length < shortest[r]) shortest[r] = length, changed = true;
      }
    }
  }
  return shortest;
}

// The fewest bytes from `e` to the end of its sequence.
size_t shortest_rest(const Element* e, const std::vector<size_t>& shortest) {
  size_t length = 0;
  for (; e->kind != Element::Kind::End; ++e)
    length = std::min(kUnbounded, length + (e->kind == Element::Kind::Bytes ? 1 : shortest[e->rule]));
  return length;
}

// A byte of `set`: the first printable one, else the first (a UTF-8 continuation byte).
char first_byte(const ByteSet& set) {
  for (int c = 0x20; c < 0x7f; ++c) {
    if (set.test(size_t(c))) return char(c);
  }
  for (int c = 0; c < 256; ++c) {
    if (set.test(size_t(c))) return char(c);
  }
  return 0;
}

}  // namespace

// The text that empties `stack`, each rule by its shortest alternative.
std::string Matcher::complete(Stack stack, const std::vector<size_t>& shortest) const {
  std::string completion;
  while (!stack.empty()) {
    const Element* e = stack.back();
    stack.pop_back();
    if ((e + 1)->kind != Element::Kind::End) stack.push_back(e + 1);
    if (e->kind == Element::Kind::Bytes) {
      completion += first_byte(e->bytes);
      continue;
    }
    const std::vector<Sequence>& alternatives = grammar_->rules[e->rule];
    const Sequence& least = *std::min_element(alternatives.begin(), alternatives.end(), [&](const Sequence& a, const Sequence& b) {
      return shortest_rest(&a.front(), shortest) < shortest_rest(&b.front(), shortest);
    });
    if (least.front().kind != Element::Kind::End) stack.push_back(&least.front());
  }
  return completion;
}

std::string Matcher::shortest_completion() const {
  if (dead() || can_end()) return "";
  const std::vector<size_t> shortest = shortest_rules(*grammar_);
  auto left = [&](const Stack& stack) {
    size_t length = 0;
    for (const Element* e : stack) length = std::min(kUnbounded, length + shortest_rest(e, shortest));
    return length;
  };
  size_t fewest = kUnbounded;
  for (const Stack& stack : stacks_) fewest = std::min(fewest, left(stack));
  if (fewest >= kUnbounded) return "";  // no sentence ends from here
  // Of the shortest, the first in byte order: the stacks' order is their addresses'.
  std::optional<std::string> first;
  for (const Stack& stack : stacks_) {
    if (left(stack) != fewest) continue;
    std::string completion = complete(stack, shortest);
    if (!first || completion < *first) first = std::move(completion);
  }
  return *first;
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
