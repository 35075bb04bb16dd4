// Cold start on the default model: the importance statistic gathered through llama.cpp's
// evaluation callback covers every weight matrix with the matrix's input width, a packed model
// keeps to its budget, and a model whose weights stream in while it computes answers as the
// model loaded from the file does.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "importance.h"
#include "model.h"
#include "schemaweaver/engine.h"
#include "schemaweaver/pack.h"

namespace {

const char* kCalibration = "/usr/share/common-licenses/GPL-3";

TEST(Pack, ImportanceCoversEveryMatrixOfEveryLayer) {
  auto model = sw::Model::load({SW_TEST_MODEL});
  const std::string text = "The licenses for most software are designed to take away your freedom to share "
                           "and change it. By contrast, the GNU General Public License is intended to guarantee.";
  sw::Calibration c = sw::measure_importance(model->impl(), text, 64, 16);
  EXPECT_GT(c.tokens, 16);  // more than one window
  const int layers = int(llama_model_n_layer(model->impl().model));
  const int width = int(llama_model_n_embd(model->impl().model));
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
  EXPECT_THROW(sw::measure_importance(model->impl(), "", 64), sw::Error);
}

TEST(Pack, PackedModelKeepsToItsBudget) {
  const std::string out = std::filesystem::temp_directory_path() / "schemaweaver-test-packed.gguf";
  sw::PackOptions options{SW_TEST_MODEL, kCalibration, out};
  options.bits_per_weight = 4.8;
  options.calibration_tokens = 128;
  sw::PackResult r = sw::pack_model(options);
  EXPECT_LE(r.bits_per_weight, 4.8);
  EXPECT_GE(r.bits_per_weight, 4.5);  // no type below Q4_0's 4.5 bits fits most of this model's rows
  EXPECT_LT(r.packed_bytes, r.source_bytes);
  EXPECT_LE(r.packed_bytes, std::filesystem::file_size(out));
  ASSERT_FALSE(r.tensors.empty());
  for (const sw::PackedTensor& t : r.tensors) EXPECT_GE(t.error, 0) << t.name;
  auto packed = sw::Model::load({out});  // stock llama.cpp reads it
  EXPECT_EQ(packed->info().parameters, sw::Model::load({SW_TEST_MODEL})->info().parameters);
  std::filesystem::remove(out);
}

TEST(Streaming, WeightsReadDuringThePassGiveTheSameCalls) {
  sw::ModelParams file_load{SW_TEST_MODEL};
  sw::ModelParams streamed = file_load;
  streamed.stream = true;
  std::ifstream tools_file(SW_EXAMPLES "/weather_tools.json");
  auto tools = sw::parse_tools(sw::Json::parse(tools_file));
  for (const char* request : {"What is the weather like in Paris?", "Weather in Oslo in fahrenheit, please."}) {
    std::vector<sw::Message> chat{{"user", request}};
    sw::CallResult expected = sw::Session(sw::Model::load(file_load)).call(chat, tools, {});
    sw::CallResult got = sw::Session(sw::Model::load(streamed)).call(chat, tools, {});
    ASSERT_TRUE(expected.error.empty()) << expected.error;
    EXPECT_EQ(got.text, expected.text) << request;
  }
}

TEST(Streaming, UnreadableFileFailsClearly) {
  sw::ModelParams streamed{SW_TEST_DATA "/corrupt.gguf"};
  streamed.stream = true;
  EXPECT_THROW(sw::Model::load(streamed), sw::Error);
}

}  // namespace
