// Sampling on the default model (SmolLM2-135M): a seeded call is reproducible, and SchemaWeaver
// draws its calls from jump-forward's distribution. The second is a statistical test: over many
// seeds, the values of two enum arguments decoded in branches (verified by a draw per token) and
// decoded serially must not differ by a chi-square test of homogeneity at significance 0.001;
// the same test must reject the branches when their values stand unverified (greedy drafts).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "agreement.h"
#include "schemaweaver/engine.h"

namespace {

std::shared_ptr<sw::Model> model() {
  static std::shared_ptr<sw::Model> loaded = sw::Model::load({SW_TEST_MODEL});
  return loaded;
}

// Two required enum arguments, which SmolLM2 fills with spread choices at temperature 1.
std::vector<sw::ToolSpec> paint_tool() {
  return sw::parse_tools(sw::Json::parse(R"([{"name": "paint", "description": "Paint a banner.", "parameters": {
    "type": "object", "properties": {
      "color": {"type": "string", "enum": ["red", "green", "blue", "yellow"]},
      "size": {"type": "string", "enum": ["small", "medium", "large"]}}, "required": ["color", "size"]}}])"));
}

const std::vector<sw::Message> kRequest = {{"user", "Paint a banner in any color and size you like."}};

sw::CallOptions drawing(sw::DecodeMode mode, uint64_t seed) {
  sw::CallOptions options;
  options.mode = mode;
  options.max_tokens = 48;
  options.max_calls = 1;  // drawn, the model may list more calls; one is what is compared
  options.sampling.temperature = 1.0f;
  options.sampling.seed = seed;
  options.weaver.plan_by_cost = false;  // the values in branches, whatever the plan predicts
  return options;
}

// The chi-square statistic of homogeneity of two samples' counts, and its degrees of freedom
// (categories seen in either, less one).
std::pair<double, int> chi_square(const std::map<std::string, int>& a, const std::map<std::string, int>& b) {
  std::map<std::string, std::pair<int, int>> table;
  for (const auto& [k, n] : a) table[k].first = n;
  for (const auto& [k, n] : b) table[k].second = n;
  double na = 0, nb = 0;
  for (const auto& [k, n] : table) na += n.first, nb += n.second;
  double statistic = 0;
  for (const auto& [k, n] : table) {
    const double total = n.first + n.second;
    const double ea = total * na / (na + nb), eb = total * nb / (na + nb);
    statistic += (n.first - ea) * (n.first - ea) / ea + (n.second - eb) * (n.second - eb) / eb;
  }
  return {statistic, int(table.size()) - 1};
}

// The chi-square quantile at 1 - 0.001 for 1 to 4 degrees of freedom.
double critical_at_0_001(int df) {
  static const double values[] = {0, 10.828, 13.816, 16.266, 18.467};
  return values[std::min(df, 4)];
}

struct Counts {
  std::map<std::string, int> color, size;
};

// Calls drawn with the seeds first_seed, first_seed + 1, ... (each sample its own seeds: with the
// same seeds two modes that draw alike would give the same calls, not independent samples).
Counts draw_calls(sw::Session& session, const std::vector<sw::ToolSpec>& tools, sw::DecodeMode mode, bool verify,
                  uint64_t first_seed, int n) {
  Counts counts;
  for (uint64_t seed = first_seed; seed < first_seed + uint64_t(n); ++seed) {
    sw::CallOptions options = drawing(mode, seed);
    options.weaver.verify = verify;
    sw::CallResult r = session.call(kRequest, tools, options);
    EXPECT_TRUE(r.error.empty()) << r.error;
    if (r.calls.empty()) continue;
    counts.color[r.calls[0].arguments.value("color", "?")] += 1;
    counts.size[r.calls[0].arguments.value("size", "?")] += 1;
  }
  return counts;
}

TEST(Sampling, ASeededCallIsReproducibleAndSeedsDiffer) {
  auto tools = paint_tool();
  sw::Session session(model());
  for (sw::DecodeMode mode : {sw::DecodeMode::JumpForward, sw::DecodeMode::SchemaWeaver, sw::DecodeMode::Free}) {
    std::set<std::string> texts;
    for (uint64_t seed : {7, 7, 8, 9, 10, 11}) {
      sw::CallResult r = session.call(kRequest, tools, drawing(mode, seed));
      if (seed == 7 && texts.count(r.text) == 0 && !texts.empty()) ADD_FAILURE() << "seed 7 gave two answers";
      texts.insert(r.text);
    }
    EXPECT_GT(texts.size(), 1u) << sw::to_string(mode) << ": five seeds, one answer";
  }
  // A sampling setting out of range is the caller's error.
  sw::CallOptions bad = drawing(sw::DecodeMode::JumpForward, 1);
  bad.sampling.top_p = 0;
  EXPECT_THROW(session.check(kRequest, tools, bad), sw::Error);  // before any pass
  EXPECT_THROW(session.call(kRequest, tools, bad), sw::Error);
}

// A call streamed as it is decided (CallOptions::on_call_delta): its name first, then pieces of
// its arguments that joined equal the final arguments' dump and the answer's text - drawn, so
// that SchemaWeaver's verifier rejects draft values and the serial reference repairs them, and
// where it accepts them, the reference's remade last choice is the very draw that agreed.
TEST(Sampling, ACallsDeltasJoinToItsArguments) {
  auto tools = paint_tool();
  sw::Session session(model());
  int repaired = 0;
  for (sw::DecodeMode mode : {sw::DecodeMode::JumpForward, sw::DecodeMode::SchemaWeaver, sw::DecodeMode::Constrained}) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      sw::CallOptions options = drawing(mode, seed);
      std::map<int, std::string> names, arguments;
      options.on_call_delta = [&](const sw::CallDelta& d) {
        EXPECT_EQ(d.name.empty(), names.count(d.index) > 0) << "the name in the first delta, only there";
        names[d.index] += d.name;
        arguments[d.index] += d.arguments;
      };
      sw::CallResult r = session.call(kRequest, tools, options);
      ASSERT_TRUE(r.error.empty()) << r.error;
      ASSERT_EQ(r.calls.size(), 1u);
      EXPECT_EQ(names[0], r.calls[0].name) << sw::to_string(mode) << " seed " << seed;
      EXPECT_EQ(arguments[0], sw::dump_json(r.calls[0].arguments)) << sw::to_string(mode) << " seed " << seed;
      // Enum values: the text writes the arguments as dump_json does.
      EXPECT_NE(r.text.find(arguments[0]), std::string::npos) << "the answer's text holds the call told: " << r.text;
      repaired += r.stats.verification.discarded_tokens > 0;
    }
  }
  std::printf("[ repaired ] %d of 8 drawn schemaweaver calls\n", repaired);
  EXPECT_GT(repaired, 0) << "no draft value was rejected: the repair's deltas went untested";
}

TEST(Sampling, SchemaWeaverDrawsFromJumpForwardsDistribution) {
  constexpr int kDraws = 120;
  auto tools = sw::compile_tools(model(), paint_tool());
  sw::Session session(model());
  const Counts serial = draw_calls(session, tools->tools(), sw::DecodeMode::JumpForward, true, 1, kDraws);
  const Counts woven = draw_calls(session, tools->tools(), sw::DecodeMode::SchemaWeaver, true, 1001, kDraws);
  const Counts unverified = draw_calls(session, tools->tools(), sw::DecodeMode::SchemaWeaver, false, 2001, kDraws);
  ASSERT_GE(serial.color.size(), 2u) << "the model's choice must be spread for the test to mean anything";
  for (auto [name, of] : {std::pair{"color", &Counts::color}, std::pair{"size", &Counts::size}}) {
    auto [statistic, df] = chi_square(serial.*of, woven.*of);
    EXPECT_LT(statistic, critical_at_0_001(df)) << name << ": schemaweaver's values differ from jump-forward's";
    std::printf("[ %s ] chi-square %.2f (df %d) verified, ", name, statistic, df);
    std::tie(statistic, df) = chi_square(serial.*of, unverified.*of);
    std::printf("%.2f unverified; critical %.2f\n", statistic, critical_at_0_001(df));
    if (std::string(name) == "color")
      EXPECT_GT(statistic, critical_at_0_001(df)) << "unverified greedy drafts must fail the test";
  }
}

}  // namespace
