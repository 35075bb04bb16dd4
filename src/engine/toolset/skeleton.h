// The skeleton of a SchemaWeaver call: the text the schema fixes before the argument values,
// cut where the model's own tokenizer puts a token boundary.
//
// The head (the call's opener, name and "arguments" key) goes into the conversation; each
// branch adds one argument's name after it. A tokenizer often fuses text across such a seam
// (' "' is one token, as are '{"' and ' -'), so each piece ends at the last byte position where
// the tokenization of the piece followed by any likely continuation has a boundary; the bytes
// after that position are left to the next piece (for a branch: to its value, as a prefix
// that the value's constraint requires and the model spells as it likes).
#pragma once

#include <string>
#include <vector>

#include "engine/model/model.h"

namespace sw {

struct Cut {
  std::vector<llama_token> tokens;  // tokenize(text before the cut)
  std::string left;                 // the bytes after the cut
};

// Cuts `text` at the last byte position p such that, for every continuation c, the model's
// tokenization of text + c has a token boundary at p and its tokens before p are those of the
// text before p.
Cut cut_at_boundary(const LoadedModel& model, const std::string& text,
                    const std::vector<std::string>& continuations);

// Likely first characters of a value of this schema as `syntax` writes it, for finding
// boundaries before it.
std::vector<std::string> value_openings(const Schema& schema, const ArgumentSyntax& syntax = ArgumentSyntax());

struct SkeletonBranch {
  const Property* argument = nullptr;
  std::string key_text;              // '"name": ' - what precedes the value in the call text (ArgumentSyntax::key_text)
  std::vector<llama_token> tokens;   // the branch's tokens after the head
  std::string value_prefix;          // the end of the skeleton text that the value must start with
};

struct Skeleton {
  std::vector<llama_token> head;  // shared by the conversation and every branch
  std::string head_left;          // head text not in `head` (carried into every branch)
  std::vector<SkeletonBranch> branches;
};

// `head_text` ends where the arguments' members begin (after '"arguments": {'); `format` writes
// the call.
Skeleton build_skeleton(const LoadedModel& model, const std::string& head_text,
                        const std::vector<const Property*>& arguments, const CallFormat& format);

}  // namespace sw
