// The shape spec a user writes, and the models shaping refuses before reading any weight.
#include <gguf.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "modeltools/gguf_metadata.h"
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

// A llama-like GGUF file with one F32 tensor of 32 x 8 and these heads; `cut` bytes short.
std::string tiny_llama(const char* name, uint32_t heads, size_t cut = 0) {
  const std::string path = std::filesystem::temp_directory_path() / name;
  gguf_context* gguf = gguf_init_empty();
  gguf_set_val_str(gguf, "general.architecture", "llama");
  gguf_set_val_u32(gguf, "llama.block_count", 1);
  gguf_set_val_u32(gguf, "llama.feed_forward_length", 64);
  gguf_set_val_u32(gguf, "llama.embedding_length", 32);
  gguf_set_val_u32(gguf, "llama.attention.head_count", heads);
  ggml_init_params params{ggml_tensor_overhead() * 2 + 32 * 8 * 4 + 256, nullptr, false};
  ggml_context* ctx = ggml_init(params);
  ggml_tensor* t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 8);
  ggml_set_name(t, "token_embd.weight");
  gguf_add_tensor(gguf, t);
  EXPECT_TRUE(gguf_write_to_file(gguf, path.c_str(), false));
  gguf_free(gguf);
  ggml_free(ctx);
  if (cut) std::filesystem::resize_file(path, std::filesystem::file_size(path) - cut);
  return path;
}

std::string shape_error(const std::string& path) {
  ggml_context* meta = nullptr;
  gguf_context* gguf = gguf_init_from_file(path.c_str(), gguf_init_params{true, &meta});
  if (!gguf) return "not a GGUF file";
  std::string error;
  try {
    sw::read_model_shape(gguf, path);
  } catch (const sw::Error& e) {
    error = e.what();
  }
  gguf_free(gguf);
  ggml_free(meta);
  return error;
}

// Written beside the GGUF fuzz target: a head count of 0 was a division by zero when shape
// derived the head size; a truncated file's tensors pointed past its end.
TEST(GgufMetadata, ShapeAndTensorExtentsAreChecked) {
  const std::string good = tiny_llama("schemaweaver-test-tiny.gguf", 4);
  EXPECT_EQ(shape_error(good), "");
  const std::vector<sw::GgufTensorInfo> tensors = sw::read_tensor_infos(good);
  ASSERT_EQ(tensors.size(), 1u);
  EXPECT_EQ(tensors[0].name, "token_embd.weight");
  EXPECT_EQ(tensors[0].dims, 2);
  EXPECT_EQ(tensors[0].bytes, 32u * 8u * 4u);

  const std::string no_heads = tiny_llama("schemaweaver-test-no-heads.gguf", 0);
  EXPECT_NE(shape_error(no_heads).find("'llama.attention.head_count' is 0, not between 1 and 32"), std::string::npos)
      << shape_error(no_heads);
  const std::string odd_heads = tiny_llama("schemaweaver-test-odd-heads.gguf", 5);
  EXPECT_NE(shape_error(odd_heads).find("do not divide a width of 32"), std::string::npos) << shape_error(odd_heads);

  const std::string truncated = tiny_llama("schemaweaver-test-truncated.gguf", 4, 100);
  try {
    sw::read_tensor_infos(truncated);
    ADD_FAILURE() << "a tensor past the file's end was listed";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not lie within the file"), std::string::npos) << e.what();
  }
  for (const std::string& path : {good, no_heads, odd_heads, truncated}) std::filesystem::remove(path);
}

}  // namespace
