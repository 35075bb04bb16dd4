// A model whose weights are still being read while it computes (a pipelined cold load).
//
// llama.cpp's own loaders read every weight before the model exists (mmap populates the whole
// mapping; no-mmap reads into memory). Here the model is made from the file's metadata alone
// (llama_model_init_from_user) with a tensor-data callback that only records each tensor; a
// reader thread then fills the tensors in the order the forward pass needs them (the embedding
// table, block 0, block 1, ..., the output), and every context of the model holds a pass, at
// the node that first uses a weight, until that weight is in (the evaluation callback). Passes
// are split after each block's output, so block k computes while block k+1 is read.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <llama.h>

struct gguf_context;
struct ggml_context;

namespace sw {

class StreamingLoad {
 public:
  // Reads the metadata of `path` and makes the model; the weights follow in the background.
  // Throws Error if the file is not a readable GGUF or llama.cpp cannot build the model.
  StreamingLoad(const std::string& path, llama_model_params params);
  ~StreamingLoad();
  StreamingLoad(const StreamingLoad&) = delete;
  StreamingLoad& operator=(const StreamingLoad&) = delete;

  // The model. It stays the caller's to free (llama_model_free), after this object is gone:
  // the destructor stops the reader first.
  llama_model* model() const { return model_; }
  // What the file's weights hold (llama.cpp counts only the weights it loaded itself).
  uint64_t parameters() const;
  uint64_t weight_bytes() const;
  // llama.cpp's evaluation callback for contexts of this model (user data: this object).
  static bool gate(ggml_tensor* node, bool ask, void* self);

 private:
  struct Pending {
    ggml_tensor* tensor;
    uint64_t offset;  // of its data in the file
    int group;        // the order it is read in: 0 first
    bool in_file;     // else filled with `fill` (an optional tensor the file lacks)
    float fill;
  };

  static void record(ggml_tensor* tensor, void* self);
  // For a model whose output reuses the embedding table: declares the output in the metadata
  // with the table's type; returns the table's tensor id (its data is the output's), or -1.
  int64_t declare_tied_output();
  // Where each recorded tensor's data is and when it is read; throws Error on a mismatch.
  void plan_reading(int64_t tied);
  void free_metadata();
  uint64_t sum_over_file(bool bytes) const;  // of the weights' bytes, or of their parameters
  void read_all();
  // Asks the kernel to start reading the group after the one pending_[first] belongs to, in the
  // background, so that the disk stays busy while this group is copied and repacked.
  void read_ahead(int fd, size_t first) const;
  void finish_group(int group, const std::string& error);
  // Blocks until `group` is in; false if reading failed.
  bool wait_for_group(int group);

  std::string path_;
  gguf_context* metadata_ = nullptr;
  ggml_context* shapes_ = nullptr;      // the file's tensors (shapes and types, no data)
  llama_model* model_ = nullptr;
  std::vector<Pending> pending_;        // in reading order
  std::unordered_map<const ggml_tensor*, int> group_by_tensor_;
  std::thread reader_;
  std::mutex mutex_;
  std::condition_variable loaded_;
  int groups_done_ = 0;                 // groups 0 .. groups_done_-1 are in
  int group_count_ = 0;
  std::atomic<bool> all_done_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> stop_{false};       // the destructor asks the reader to stop
  std::string error_;
};

}  // namespace sw
