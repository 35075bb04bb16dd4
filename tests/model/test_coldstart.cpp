// Cold start on the default model: the importance statistic gathered through llama.cpp's
// evaluation callback covers every weight matrix with the matrix's input width; a packed model
// keeps to its budget and stays close to its source on a text it was not calibrated on; a model
// whose weights stream in while it computes answers as the model loaded from the file does; a
// prompt state saved and restored later changes no answer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gguf.h>

#include "agreement.h"
#include "schemaweaver/engine.h"
#include "schemaweaver/pack.h"
#include "schemaweaver/quality.h"
#include "testing.h"

namespace {

const char* kCalibration = "/usr/share/common-licenses/GPL-3";
const char* kHeldOutText = "/usr/share/common-licenses/Apache-2.0";

TEST(Pack, ImportanceCoversEveryMatrixOfEveryLayer) {
  auto model = sw::Model::load({SW_TEST_MODEL});
  const std::string text = "The licenses for most software are designed to take away your freedom to share "
                           "and change it. By contrast, the GNU General Public License is intended to guarantee.";
  sw::Calibration c = sw::measure_importance(loaded(*model), text, 64, {}, 16);
  EXPECT_GT(c.tokens, 16);  // more than one window
  const int layers = int(llama_model_n_layer(loaded(*model).model));
  const int width = int(llama_model_n_embd(loaded(*model).model));
  for (int layer = 0; layer < layers; ++layer) {
    for (const char* kind : {"attn_q", "attn_k", "attn_v", "ffn_up", "ffn_gate"}) {
      std::string name = "blk." + std::to_string(layer) + "." + kind + ".weight";
      auto found = c.importance.find(name);
      ASSERT_NE(found, c.importance.end()) << name;
      ASSERT_EQ(int(found->second.mean_square.size()), width) << name;
      double total = 0;
      for (double v : found->second.mean_square) {
        ASSERT_TRUE(std::isfinite(v) && v >= 0) << name;
        total += v;
      }
      EXPECT_GT(total, 0) << name;
    }
  }
  EXPECT_THROW(sw::measure_importance(loaded(*model), "", 64), sw::Error);
}

// A tensor's bytes as the file stores them.
std::vector<char> tensor_bytes(const std::string& path, const std::string& name) {
  gguf_init_params params{true, nullptr};
  gguf_context* gguf = gguf_init_from_file(path.c_str(), params);
  const int64_t id = gguf_find_tensor(gguf, name.c_str());
  const size_t offset = gguf_get_data_offset(gguf) + gguf_get_tensor_offset(gguf, id);
  std::vector<char> bytes(gguf_get_tensor_size(gguf, id));
  gguf_free(gguf);
  std::ifstream file(path, std::ios::binary);
  file.seekg(std::streamoff(offset));
  file.read(bytes.data(), std::streamsize(bytes.size()));
  return bytes;
}

// The probe behind the sensitivity weighting: an unchanged tensor moves nothing, a changed one
// moves the distributions, and the tensor is put back after each probe.
TEST(Pack, OutputProbeSeesAChangeAndPutsTheTensorBack) {
  sw::ModelParams params{SW_TEST_MODEL};
  params.mmap = false;
  auto model = sw::Model::load(params);
  sw::OutputProbe probe(loaded(*model), loaded(*model).tokenize("The quick brown fox jumps over the lazy dog.", false));
  const std::string name = "blk.0.attn_norm.weight";  // float weights of the first norm
  const std::vector<char> original = tensor_bytes(SW_TEST_MODEL, name);
  std::vector<char> halved = original;
  for (size_t i = 0; i + sizeof(float) <= halved.size(); i += sizeof(float)) {
    float v;
    std::memcpy(&v, &halved[i], sizeof v);
    v *= 0.5f;
    std::memcpy(&halved[i], &v, sizeof v);
  }
  EXPECT_EQ(probe.divergence_with(name, original, original).value(), 0.0);
  EXPECT_GT(probe.divergence_with(name, halved, original).value(), 1e-4);
  EXPECT_EQ(probe.divergence_with(name, original, original).value(), 0.0);  // put back
  EXPECT_FALSE(probe.divergence_with("blk.99.ffn_up.weight", original, original).has_value());
}

TEST(Pack, PackedModelKeepsToItsBudgetAndStaysClose) {
  const std::string out = std::filesystem::temp_directory_path() / "schemaweaver-test-packed.gguf";
  sw::PackOptions options{SW_TEST_MODEL, kCalibration, out};
  options.bits_per_weight = 4.8;
  options.calibration_tokens = 128;
  options.sensitivity_tokens = 8;  // as cli.pack: the one measurement serves both (kept in the test run's folder)
  sw::PackResult r = sw::pack_model(options);
  EXPECT_LE(r.bits_per_weight, 4.8);
  EXPECT_GE(r.bits_per_weight, 4.5);  // no type below Q4_0's 4.5 bits fits most of this model's rows
  EXPECT_LT(r.packed_bytes, r.source_bytes);
  EXPECT_LE(r.packed_bytes, std::filesystem::file_size(out));
  ASSERT_FALSE(r.tensors.empty());
  EXPECT_EQ(r.error_unit, "nats");  // errors weighed by the output's measured sensitivity
  for (const sw::PackedTensor& t : r.tensors) EXPECT_GE(t.error, 0) << t.name;
  auto packed = sw::Model::load({out});  // stock llama.cpp reads it
  EXPECT_EQ(packed->info().parameters, sw::Model::load({SW_TEST_MODEL})->info().parameters);
  sw::QualityOptions q{out, SW_TEST_MODEL, kHeldOutText};
  q.max_tokens = 256;
  q.window = 128;
  sw::QualityReport quality = sw::compare_to_reference(q);
  EXPECT_EQ(quality.tokens, 256);  // every token predicted: the model has a BOS token
  EXPECT_GT(quality.kl_divergence, 0.0);  // fewer bits change the distributions a little
  // Calibrated on 128 tokens only (a quick test): close, not as close as a real packing.
  EXPECT_LT(quality.kl_divergence, 0.3);
  EXPECT_GT(quality.top1_agreement, 0.7);
  EXPECT_NEAR(quality.perplexity / quality.reference_perplexity, 1.0, 0.3);
  std::filesystem::remove(out);
}

TEST(Quality, ModelAgainstItselfHasNoDivergence) {
  sw::QualityOptions q{SW_TEST_MODEL, SW_TEST_MODEL, kHeldOutText};
  q.max_tokens = 200;
  q.window = 64;
  sw::QualityReport r = sw::compare_to_reference(q);
  EXPECT_EQ(r.tokens, 200);
  EXPECT_DOUBLE_EQ(r.kl_divergence, 0.0);
  EXPECT_DOUBLE_EQ(r.top1_agreement, 1.0);
  EXPECT_DOUBLE_EQ(r.perplexity, r.reference_perplexity);
  EXPECT_GT(r.perplexity, 1.0);
  EXPECT_LT(r.perplexity, 100.0);  // a license text is ordinary English to a chat model
}

TEST(Quality, BadInputFailsClearly) {
  const std::string empty = SW_TEST_DATA "/empty.txt";
  EXPECT_THROW(sw::compare_to_reference({SW_TEST_MODEL, SW_TEST_MODEL, empty}), sw::Error);
  EXPECT_THROW(sw::compare_to_reference({SW_TEST_MODEL, "/nonexistent.gguf", kHeldOutText}), sw::Error);
  EXPECT_THROW(sw::compare_to_reference({SW_TEST_MODEL, SW_TEST_MODEL, "/nonexistent.txt"}), sw::Error);
}

TEST(Streaming, WeightsReadDuringThePassGiveTheSameCalls) {
  sw::ModelParams file_load{SW_TEST_MODEL};
  sw::ModelParams streamed = file_load;
  streamed.stream = true;
  std::ifstream tools_file(SW_EXAMPLES "/weather_tools.json");
  auto tools = sw::parse_tools(sw::Json::parse(tools_file));
  for (const char* request : {"What is the weather like in Paris?", "Weather in Oslo in fahrenheit, please."}) {
    std::vector<sw::Message> chat{{"user", request}};
    sw::CallResult expected = fresh_call(sw::Model::load(file_load), chat, tools, {});
    sw::CallResult got = fresh_call(sw::Model::load(streamed), chat, tools, {});
    ASSERT_TRUE(expected.error.empty()) << expected.error;
    EXPECT_EQ(got.text, expected.text) << request;  // the same kernels on the same weights
  }
}

// A prompt state saved by one session and restored by another (as by a later process) spares
// the prompt's computation and changes no answer; a state computed by another model file is not
// used.
TEST(PromptState, RestoredPromptGivesTheSameCallsWithoutRecomputing) {
  std::ifstream tools_file(SW_EXAMPLES "/weather_tools.json");
  auto tools = sw::parse_tools(sw::Json::parse(tools_file));
  auto model = sw::Model::load({SW_TEST_MODEL});
  const std::string path = std::filesystem::temp_directory_path() / "schemaweaver-test-prompt-state.bin";
  const std::vector<sw::Message> paris{{"user", "What is the weather like in Paris?"}};
  const std::vector<sw::Message> oslo{{"user", "Weather in Oslo in fahrenheit, please."}};
  auto first = fresh_session(model);
  EXPECT_THROW(first->save_prompt_state(path), sw::Error);  // no call yet
  sw::CallResult saved = first->call(paris, tools, {});
  ASSERT_TRUE(saved.error.empty()) << saved.error;
  first->save_prompt_state(path);

  // A prompt whose last token is computed again in a pass of its own rounds otherwise than one
  // computed whole: the answers agree up to a near-tie.
  auto again = fresh_session(model);
  EXPECT_EQ(again->restore_prompt_state(path), saved.stats.prompt_tokens);
  sw::CallResult repeated = again->call(paris, tools, {});
  EXPECT_EQ(repeated.stats.prompt_reused_tokens, saved.stats.prompt_tokens - 1);  // the last is fed again
  EXPECT_TRUE(agree_where_decided(saved, repeated));

  auto other_request = fresh_session(model);
  ASSERT_GT(other_request->restore_prompt_state(path), 0);
  sw::CallResult restored = other_request->call(oslo, tools, {});
  sw::CallResult computed = fresh_call(model, oslo, tools, {});
  EXPECT_GT(restored.stats.prompt_reused_tokens, restored.stats.prompt_tokens / 2);  // system prompt and tools
  EXPECT_TRUE(agree_where_decided(computed, restored));

  const std::string copy = std::filesystem::temp_directory_path() / "schemaweaver-test-model-copy.gguf";
  std::filesystem::copy_file(SW_TEST_MODEL, copy, std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(sw::Session(sw::Model::load({copy})).restore_prompt_state(path), 0);  // another file
  std::filesystem::remove(copy);
  EXPECT_EQ(sw::Session(model).restore_prompt_state(path + ".missing"), 0);
  EXPECT_THROW(sw::Session(model).restore_prompt_state(SW_EXAMPLES "/weather_tools.json"), sw::Error);
  std::filesystem::remove(path);
}

// The prompt cache on disk: the first session with a tool set saves its prefix (the system
// message with the tools, not the user's request); a later session (as a restarted server) with
// the same tools and another request restores it, computes only the rest, and answers as a
// session that computed everything; another tool set is a miss; the folder stays within its
// bound, the least recently used file out first.
TEST(PromptCache, KnownToolSetIsRestoredAcrossSessionsAndTheFolderStaysBounded) {
  std::ifstream weather_file(SW_EXAMPLES "/weather_tools.json");
  std::ifstream traffic_file(SW_EXAMPLES "/traffic_tools.json");
  auto weather = sw::parse_tools(sw::Json::parse(weather_file));
  auto traffic = sw::parse_tools(sw::Json::parse(traffic_file));
  auto model = sw::Model::load({SW_TEST_MODEL});
  const auto dir = std::filesystem::temp_directory_path() / "schemaweaver-test-prompt-cache";
  std::filesystem::remove_all(dir);
  const std::vector<sw::Message> paris{{"user", "What is the weather like in Paris?"}};
  const std::vector<sw::Message> oslo{{"user", "Weather in Oslo in fahrenheit, please."}};
  auto cached_session = [&](uint64_t max_bytes, const std::filesystem::path& folder) {
    auto session = fresh_session(model);
    session->use_prompt_cache(folder.string(), max_bytes);
    return session;
  };
  auto files = [&] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".swprompt";
    return n;
  };
  auto only_file_bytes = [](const std::filesystem::path& folder) {
    return std::filesystem::file_size(*std::filesystem::directory_iterator(folder));
  };

  sw::CallResult first = cached_session(1 << 30, dir)->call(paris, weather, {});
  ASSERT_TRUE(first.error.empty()) << first.error;
  const int prefix = first.stats.prompt_cache_stored_tokens;
  EXPECT_GT(prefix, first.stats.prompt_tokens / 2);  // the tools' system message is most of it
  EXPECT_LT(prefix, first.stats.prompt_tokens - 5);  // the request is not part of it
  EXPECT_EQ(first.stats.prompt_restored_tokens, 0);
  EXPECT_EQ(files(), 1u);

  sw::CallResult restored = cached_session(1 << 30, dir)->call(oslo, weather, {});
  sw::CallResult computed = fresh_call(model, oslo, weather, {});
  EXPECT_EQ(restored.stats.prompt_restored_tokens, prefix);
  EXPECT_EQ(restored.stats.prompt_reused_tokens, prefix);
  EXPECT_EQ(restored.stats.prompt_cache_stored_tokens, 0);
  EXPECT_TRUE(agree_where_decided(computed, restored));

  // Another tool set is another prefix; a bound that holds one of the two files keeps the newest.
  const std::vector<sw::Message> oakland{{"user", "Traffic from Oakland to San Jose at 17:30?"}};
  const auto elsewhere = dir / "elsewhere";
  cached_session(1 << 30, elsewhere)->call(oakland, traffic, {});
  const uint64_t traffic_bytes = only_file_bytes(elsewhere);
  std::filesystem::remove_all(elsewhere);
  sw::CallResult other = cached_session(traffic_bytes + only_file_bytes(dir) / 2, dir)->call(oakland, traffic, {});
  EXPECT_EQ(other.stats.prompt_restored_tokens, 0);
  EXPECT_GT(other.stats.prompt_cache_stored_tokens, 0);
  EXPECT_EQ(files(), 1u);
  EXPECT_EQ(cached_session(1 << 30, dir)->call(paris, weather, {}).stats.prompt_restored_tokens, 0);  // evicted
  std::filesystem::remove_all(dir);
}

TEST(Streaming, UnreadableFileFailsClearly) {
  sw::ModelParams streamed{SW_TEST_DATA "/corrupt.gguf"};
  streamed.stream = true;
  EXPECT_THROW(sw::Model::load(streamed), sw::Error);
}

}  // namespace
