// The one serial decode loop and the strategies that make its modes.
//
// The loop asks the strategy, from the logits of the last pass, which tokens the next pass
// carries; it runs that pass and repeats until the strategy says the call is complete. Modes
// differ only in their strategy: free (argmax), constrained (argmax among tokens the grammar
// accepts), jump-forward (constrained, plus the text the grammar forces in the same pass).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "context.h"
#include "matcher.h"
#include "schemaweaver/engine.h"

namespace sw {

struct Step {
  std::vector<llama_token> tokens;  // to append in one pass
  int sampled = 0;                  // how many of them the model chose (the rest were forced)
  bool complete = false;            // the call is complete after these tokens: no pass needed
  bool stop = false;                // nothing more to append (end of generation)
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Forced tokens to append before the first sample (none by default).
  virtual Step start() { return {}; }
  virtual Step next(const float* logits) = 0;
  virtual double constraint_ms() const { return 0; }
};

std::unique_ptr<Strategy> make_strategy(DecodeMode mode, const Model::Impl& model,
                                        std::shared_ptr<const Grammar> grammar);

struct GenerationResult {
  std::string text;
  PassCounter passes;
  int forced_passes = 0;
  int sampled_tokens = 0;
  bool hit_token_limit = false;
};

GenerationResult generate(Context& context, const Model::Impl& model, Strategy& strategy,
                          int max_tokens);

// The best token by logit among those `allowed` accepts; -1 if it accepts none. Only the top
// candidates are sorted unless all of them are rejected, which gives the same choice as masking
// the whole vocabulary first, at a fraction of the cost. `order` is the caller's scratch
// buffer, reused across steps so that no step allocates.
llama_token pick_greedy(const float* logits, int n_vocab, std::vector<llama_token>& order,
                        const std::function<bool(llama_token)>& allowed);

}  // namespace sw
