#include "schemaweaver/quality.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include "engine/model/model.h"
#include "modeltools/text_reader.h"

namespace sw {
namespace {

std::shared_ptr<Model> load(const std::string& path, int threads) {
  ModelParams params;
  params.path = path;
  params.threads = threads;
  return Model::load(params);
}

struct Totals {
  double nll = 0, reference_nll = 0, kl = 0;
  int agreements = 0, positions = 0;
  std::vector<double> model_log_p, reference_log_p;

  void score(const float* model_logits, const float* reference_logits, size_t vocab, llama_token next) {
    log_softmax(model_logits, vocab, model_log_p);
    log_softmax(reference_logits, vocab, reference_log_p);
    nll -= model_log_p[size_t(next)];
    reference_nll -= reference_log_p[size_t(next)];
    kl += kl_divergence(reference_log_p, model_log_p);
    auto first = [](const std::vector<double>& v) {
      return std::max_element(v.begin(), v.end()) - v.begin();
    };
    agreements += first(model_log_p) == first(reference_log_p);
    ++positions;
  }
};

}  // namespace

Json QualityReport::to_json() const {
  return {{"tokens", tokens},
          {"perplexity", perplexity},
          {"reference_perplexity", reference_perplexity},
          {"kl_divergence", kl_divergence},
          {"top1_agreement", top1_agreement}};
}

QualityReport compare_to_reference(const QualityOptions& options) {
  if (options.window < 2) throw Error("a window holds at least 2 tokens");
  const std::string text = read_text(options.text_path, "text");
  auto model = load(options.model_path, options.threads);
  auto reference = load(options.reference_path, options.threads);
  const LoadedModel& m = loaded(*model);
  const LoadedModel& r = loaded(*reference);
  std::vector<llama_token> tokens = m.tokenize(text, false);
  if (m.vocab_size() != r.vocab_size() || r.tokenize(text, false) != tokens)
    throw Error("'" + options.model_path + "' and '" + options.reference_path +
                "' do not share a vocabulary");
  if (int(tokens.size()) > options.max_tokens) tokens.resize(size_t(std::max(options.max_tokens, 1)));
  WindowReader model_reader(m, options.window), reference_reader(r, options.window);
  Totals totals;
  const std::vector<std::vector<llama_token>> parts = WindowReader::split(tokens, options.window);
  for (const std::vector<llama_token>& part : parts) {
    report(options.progress, "scoring", size_t(&part - parts.data()), parts.size());
    model_reader.read(part, true);
    reference_reader.read(part, true);
    for (size_t i = 0; i < part.size(); ++i) {
      const float* a = model_reader.prediction_of(i);
      const float* b = reference_reader.prediction_of(i);
      if (a && b) totals.score(a, b, size_t(m.vocab_size()), part[i]);
    }
  }
  report(options.progress, "scoring", parts.size(), parts.size());
  if (totals.positions == 0) throw Error("the text '" + options.text_path + "' is too short to score");
  QualityReport report;
  report.tokens = totals.positions;
  report.perplexity = std::exp(totals.nll / totals.positions);
  report.reference_perplexity = std::exp(totals.reference_nll / totals.positions);
  report.kl_divergence = totals.kl / totals.positions;
  report.top1_agreement = double(totals.agreements) / totals.positions;
  return report;
}

}  // namespace sw
