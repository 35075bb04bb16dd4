// SchemaWeaver's verifier (weaver.h), which makes it lossless: the branches' values are a draft
// of the call, checked on the logits of the write-back pass, where every value token sees the
// whole call before it. Each choice is compared with the serial reference's (constrained greedy
// over the call's grammar, jump-forward's); the call is kept up to the first disagreement and
// the cache cut there, and the reference writes the rest.
#pragma once

#include <vector>

#include "engine/weave/write_back.h"

namespace sw {

struct Verdict {
  Matcher reference;  // the serial reference's matcher where the call stands now
  bool repaired = false;
  std::vector<llama_token> rest;  // the assembled call's tokens after where it stands
};

// The serial reference's matcher for the current call of `tool`, standing after the first
// `length` bytes of the answer (which may end before the call's head): jump-forward over the
// call's grammar, the arguments in the order the weaver writes them (the branches' first, then
// the later ones).
Matcher reference_matcher(const WeaveTurn& turn, const ToolSpec& tool, NextCall next, size_t length);

// Checks the call `w` wrote back (its `checked` logits kept) against the reference for a call
// of `tool` (`next`: whether a call may follow it). Cuts the cache and the turn's text at the
// first disagreement; returns where the reference goes on from, with the rest of the
// assembled call as its draft.
Verdict verify(WeaveTurn& turn, const std::vector<Branch>& branches, const WriteBack& w, const ToolSpec& tool,
               NextCall next);

}  // namespace sw
