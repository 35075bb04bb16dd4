// schemaweaver/quality.h - how far a changed model (packed, pruned) is from its source, on text.
//
//   sw::QualityOptions o{"packed.gguf", "source.gguf", "corpus.txt"};
//   sw::QualityReport r = sw::compare_to_reference(o);   // r.perplexity, r.kl_divergence
//
// Both models read the same tokens of the text in windows (each from an empty cache); at every
// position the model's next-token distribution is compared with the reference's: perplexity of
// each on the text, the mean Kullback-Leibler divergence KL(reference || model) in nats, and
// how often both rank the same token first. The models must share a vocabulary.
#pragma once

#include <string>

#include "schemaweaver/error.h"
#include "schemaweaver/progress.h"

namespace sw {

struct QualityOptions {
  std::string model_path;      // the model measured
  std::string reference_path;  // its source
  std::string text_path;       // plain text
  int max_tokens = 4096;       // tokens of the text read (its start)
  int window = 512;            // tokens per window
  int threads = 0;             // 0: all cores
  ProgressCallback progress;   // each window as it is scored ("scoring")
};

struct QualityReport {
  int tokens = 0;         // positions scored
  double perplexity = 0;  // of the model on the text
  double reference_perplexity = 0;
  double kl_divergence = 0;   // mean over positions, nats
  double top1_agreement = 0;  // share of positions where both rank the same token first
  Json to_json() const;
};

// Throws sw::Error on an unreadable model or text, an empty text, or models whose vocabularies
// differ.
QualityReport compare_to_reference(const QualityOptions& options);

}  // namespace sw
