// SchemaWeaver's write-back (weaver.h): the branches' values assembled into the call's tokens and
// written into the conversation in one pass - the first branch's cells adopted rather than
// computed again, the logits the verifier needs kept, and, where asked, a guess of the turn's
// next call behind the call in the same pass.
#pragma once

#include <vector>

#include "engine/weave/values_phase.h"

namespace sw {

// The assembled call's tokens after the head: the tokens the branches sampled for their
// values, as a serial decoder would have them in its cache, and the text between them (a
// value's last token, which never had a pass, then the separator and the next argument's name)
// tokenized as one piece so that the tokenizer fuses across that seam ('",' is one token).
struct Assembled {
  std::vector<llama_token> tokens;  // empty if the pieces do not add up to the call's text
  std::vector<size_t> value_at;     // per branch: where the tokens of its value start
};

// What the write-back put into the conversation after the head.
struct WriteBack {
  Assembled call;             // checked: the tokens written, up to the last value's last token
  size_t head_end = 0;        // the conversation's length before them
  size_t adopted = 0;         // of them, taken from the first branch's cells (no logits)
  bool checked = false;       // the logits of every choice to verify were kept
  std::vector<llama_token> rest;  // checked: the assembled call's tokens after those written
};

// Drops the branches and prefills the assembled call into the conversation in one pass.
//
// Checked (`check`), the pass keeps the logits where the branches made a choice that the
// serial reference may make differently (verifier.h) and stops after the last value's last
// token: how the last value ends is the reference's choice. Unchecked, the prefill stops at
// a token boundary that what may follow (the end of the arguments, or another argument)
// cannot move: where the tokenizer would fuse the value's end with that ('"}' is one token),
// the end is left to the serial decision after the values.
//
// With a `next_tool`, a guess of the turn going on with a call of it goes into the same pass,
// behind the call, as a draft that the phases after it check (WeaverOptions::whole_turn).
WriteBack write_back(WeaveTurn& turn, const std::vector<Branch>& branches, const ToolSpec* next_tool, bool check);

// The index of the token whose logits decide a branch's k-th pick (the token before it);
// the last pick's token is the first of the seam after the value.
size_t deciding_token(const Assembled& a, const std::vector<Branch>& branches, size_t branch, size_t k);

// The first pick of a branch that verification checks: the first branch saw exactly what the
// conversation holds, so where its cells are adopted only its last pick (how its value ends)
// can differ from the reference's; every pick of the others, and of a first branch computed
// again (its cells' logits are new).
size_t first_checked_pick(const WeaveTurn& turn, const std::vector<Branch>& branches, size_t branch);

}  // namespace sw
