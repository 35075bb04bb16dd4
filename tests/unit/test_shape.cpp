// The shape spec a user writes, and the models shaping refuses before reading any weight.
#include <gguf.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "schemaweaver/shape.h"

namespace {

TEST(ShapeSpec, ParsesListsAndRanges) {
  sw::ShapeSpec spec = sw::parse_shape("layers=0-3,6,9-10 ffn=4096 skip-attention=2,6");
  EXPECT_EQ(spec.layers, (std::vector<int>{0, 1, 2, 3, 6, 9, 10}));
  EXPECT_EQ(spec.ffn, (std::vector<int>{4096}));
  EXPECT_EQ(spec.skip_attention, (std::vector<int>{2, 6}));
  EXPECT_EQ(sw::parse_shape("width=512").width, 512);
  EXPECT_EQ(sw::parse_shape("").width, 0);
  EXPECT_TRUE(sw::parse_shape("").layers.empty());
}

TEST(ShapeSpec, RefusesWhatItCannotRead) {
  for (const char* bad :
       {"layers=", "layers=3-1", "layers=a", "layers=1,,2", "ffn=12x", "depth=3", "layers", "width=512,576", "width=x"}) {
    EXPECT_THROW(sw::parse_shape(bad), sw::Error) << bad;
  }
}

TEST(Shape, RefusesAnArchitectureItCannotMap) {
  const std::string path = std::filesystem::temp_directory_path() / "schemaweaver-test-gemma3.gguf";
  gguf_context* gguf = gguf_init_empty();
  gguf_set_val_str(gguf, "general.architecture", "gemma3");
  ASSERT_TRUE(gguf_write_to_file(gguf, path.c_str(), false));
  gguf_free(gguf);
  sw::ShapeOptions options{path, "", path + ".out"};
  try {
    sw::shape_model(options);
    ADD_FAILURE() << "a gemma3 model was shaped";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'gemma3' model; only llama and qwen2"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".out"));
  std::filesystem::remove(path);
}

}  // namespace
