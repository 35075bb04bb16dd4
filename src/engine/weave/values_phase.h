// SchemaWeaver's values phase (weaver.h): the call's skeleton prefilled in one pass, one branch
// per argument sharing the head's cells, then every branch's value decoded together - one pick
// per unfinished branch per pass, under the value's own grammar, with the text the grammar
// forces after it in the same pass and, with a drafter, guesses of how each value goes on.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/weave/weave_turn.h"

namespace sw {

// One argument's value, decoded in its own sequence.
struct Branch {
  const SkeletonBranch* skeleton;
  llama_seq_id sequence;
  llama_pos next_pos;
  std::shared_ptr<const Grammar> grammar;  // of the value, after skeleton->value_prefix
  Matcher matcher;
  std::string text;                  // decoded so far, starting with skeleton->value_prefix
  std::vector<llama_token> cached;   // the tokens in the branch's cells after the head
  std::vector<float> logits;         // of the branch's last token
  bool done = false;
  // The tokens chosen, each with the text its grammar forced after it (jump-forward within the
  // branch); all but the last are in `cached`, as jump-forward tokenizes them (a pick may fuse
  // with the forced text after it).
  std::vector<llama_token> picks;
  std::vector<size_t> pick_at;       // per pick: where its tokens begin among the value's tokens
  std::vector<Decision> decisions;   // one per pick, offsets into `text`

  // The text of the value (without the skeleton's prefix), as the call's syntax writes it.
  std::string value() const { return text.substr(skeleton->value_prefix.size()); }
};

// What choosing `token` makes of a value whose matcher stands at `value`: the bytes the token
// adds to the value (and the text its grammar then forces to the value's end), the matcher
// after them, and whether the value is complete.
struct Settled {
  std::string text;
  Matcher matcher;
  bool done;
};
Settled settle(const LoadedModel& model, const Matcher& value, llama_token token);

class ValuesPhase {
 public:
  explicit ValuesPhase(WeaveTurn& turn);

  // The skeleton in one pass: the head in the conversation and in every branch (its cells
  // tagged with all their sequences), each branch's argument name in its own sequence.
  std::vector<Branch> prefill_skeleton(const std::vector<const Property*>& args);
  // Decodes every branch's value. False where one cannot be (turn.result.failure says why).
  bool decode(std::vector<Branch>& branches);

 private:
  // A branch's part of one pass: its next token at `index` of the batch, and a draft from
  // `draft_index` on.
  struct Carried {
    Branch* branch;
    int index;
    std::vector<llama_token> draft;
    int draft_index = 0;
  };

  llama_token pick(const Branch& b, float& margin);
  void apply(Branch& b, llama_token token, float margin);
  void keep_logits(Branch& b, int index);
  void add_drafts(std::vector<Carried>& carried, std::vector<BatchToken>& batch);
  void take_draft(const Carried& c);

  WeaveTurn& turn_;
  const ByteSet string_body_;  // every byte a string's body may hold next
};

}  // namespace sw
