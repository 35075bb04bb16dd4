#include "engine/model/streaming.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include <ggml-backend.h>
#include <gguf.h>

#include "engine/model/model.h"
#include "schemaweaver/tools.h"

namespace sw {
namespace {

bool ends_with(const char* text, const char* end) {
  size_t n = std::strlen(text), m = std::strlen(end);
  return n >= m && std::strcmp(text + n - m, end) == 0;
}

// Built from metadata alone, a model gets every optional tensor of its architecture, also
// those its file lacks. Filled with the value that changes nothing (a bias of 0, a scale or
// rope frequency factor of 1), they compute what their absence computes. NaN: no such value.
float neutral_value(const char* name) {
  if (ends_with(name, ".bias")) return 0.0f;
  if (ends_with(name, ".scale") || ends_with(name, ".input_scale") || std::strcmp(name, "rope_freqs.weight") == 0)
    return 1.0f;
  return std::nanf("");
}

// The block a tensor belongs to ("blk.7.ffn_up.weight" -> 7), -1 if none.
int block_of(const char* name) {
  int block = -1;
  return std::sscanf(name, "blk.%d.", &block) == 1 ? block : -1;
}

bool is_output(const char* name) {
  return std::strncmp(name, "output", 6) == 0;  // output.weight, output_norm.weight
}

}  // namespace

StreamingLoad::StreamingLoad(const std::string& path, llama_model_params params) : path_(path) {
  gguf_init_params metadata_and_shapes{true, &shapes_};
  metadata_ = gguf_init_from_file(path.c_str(), metadata_and_shapes);
  if (!metadata_) throw Error("cannot read '" + path + "' as a GGUF file");
  const int64_t tied = declare_tied_output();
  model_ = llama_model_init_from_user(metadata_, &StreamingLoad::record, this, params);
  if (!model_) {
    free_metadata();
    throw Error("failed to load model '" + path + "': " + llama_last_errors());
  }
  try {
    plan_reading(tied);
  } catch (const Error&) {
    llama_model_free(model_);
    free_metadata();
    throw;
  }
  reader_ = std::thread([this] { read_all(); });
}

// Reading order: what comes before the blocks (the embedding table), the blocks in order,
// then the output; within a group, file order.
void StreamingLoad::plan_reading(int64_t tied) {
  struct stat file {};
  if (stat(path_.c_str(), &file) != 0) throw Error("cannot read '" + path_ + "'");
  int blocks = 0;
  for (const Pending& p : pending_) blocks = std::max(blocks, block_of(p.tensor->name) + 1);
  const size_t data = gguf_get_data_offset(metadata_);
  for (Pending& p : pending_) {
    const char* name = ggml_get_name(p.tensor);
    int64_t id = gguf_find_tensor(metadata_, name);
    if (tied >= 0 && std::strcmp(name, "output.weight") == 0) id = tied;
    p.in_file = id >= 0;
    p.fill = p.in_file ? 0.0f : neutral_value(name);
    if (!p.in_file && (std::isnan(p.fill) || p.tensor->type != GGML_TYPE_F32))
      throw Error("'" + path_ + "': llama.cpp builds tensor '" + name + "', which the file lacks; this model cannot be streamed");
    if (p.in_file && gguf_get_tensor_size(metadata_, id) != ggml_nbytes(p.tensor))
      throw Error("'" + path_ + "': tensor '" + name + "' does not match the model llama.cpp built");
    p.offset = p.in_file ? data + gguf_get_tensor_offset(metadata_, id) : 0;
    // A truncated file: the non-streamed load refuses it; so does this one, before computing.
    if (p.in_file && p.offset + ggml_nbytes(p.tensor) > uint64_t(file.st_size))
      throw Error("failed to load model '" + path_ + "': the file is truncated (tensor '" + name + "' ends at byte " +
                  std::to_string(p.offset + ggml_nbytes(p.tensor)) + " of " + std::to_string(file.st_size) + ")");
    int block = block_of(name);
    p.group = block >= 0 ? block + 1 : is_output(name) ? blocks + 1 : 0;
    group_by_tensor_[p.tensor] = p.group;
  }
  std::sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
    return a.group < b.group || (a.group == b.group && a.offset < b.offset);
  });
  group_count_ = blocks + 2;
}

// The weights in the file, each once: a tied output shares the embedding table's bytes.
uint64_t StreamingLoad::sum_over_file(bool bytes) const {
  std::set<uint64_t> offsets;
  uint64_t sum = 0;
  for (const Pending& p : pending_) {
    if (p.in_file && offsets.insert(p.offset).second) sum += bytes ? ggml_nbytes(p.tensor) : uint64_t(ggml_nelements(p.tensor));
  }
  return sum;
}

uint64_t StreamingLoad::parameters() const { return sum_over_file(false); }
uint64_t StreamingLoad::weight_bytes() const { return sum_over_file(true); }

int64_t StreamingLoad::declare_tied_output() {
  const int64_t embeddings = gguf_find_tensor(metadata_, "token_embd.weight");
  const ggml_tensor* table = ggml_get_tensor(shapes_, "token_embd.weight");
  if (embeddings < 0 || !table || gguf_find_tensor(metadata_, "output.weight") >= 0) return -1;
  // Built from metadata alone, llama.cpp cannot see that the output shares the embedding
  // table and would make it a float matrix; declared with the table's type, it is filled with
  // the table's bytes (a copy in memory where the file-backed load shares them).
  ggml_init_params params{ggml_tensor_overhead(), nullptr, true};
  ggml_context* scratch = ggml_init(params);
  ggml_tensor* output = ggml_new_tensor_2d(scratch, table->type, table->ne[0], table->ne[1]);
  ggml_set_name(output, "output.weight");
  gguf_add_tensor(metadata_, output);  // copies what it needs
  ggml_free(scratch);
  return embeddings;
}

void StreamingLoad::free_metadata() {
  gguf_free(metadata_);
  ggml_free(shapes_);
}

StreamingLoad::~StreamingLoad() {
  stop_ = true;
  if (reader_.joinable()) reader_.join();
  free_metadata();
}

void StreamingLoad::record(ggml_tensor* tensor, void* self) {
  static_cast<StreamingLoad*>(self)->pending_.push_back({tensor, 0, 0, true, 0.0f});
}

void StreamingLoad::read_all() {
  int fd = open(path_.c_str(), O_RDONLY);
  if (fd < 0) return finish_group(group_count_, "cannot open '" + path_ + "'");
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<char> buffer;
  size_t next = 0;
  for (int group = 0; group < group_count_; ++group) {
    read_ahead(fd, next);
    for (; next < pending_.size() && pending_[next].group == group; ++next) {
      if (stop_) {
        close(fd);
        return finish_group(group_count_, "stopped");
      }
      const Pending& p = pending_[next];
      buffer.resize(ggml_nbytes(p.tensor));
      if (!p.in_file) {
        std::vector<float> values(size_t(ggml_nelements(p.tensor)), p.fill);
        std::memcpy(buffer.data(), values.data(), buffer.size());
      }
      size_t done = p.in_file ? 0 : buffer.size();
      while (done < buffer.size()) {
        ssize_t n = pread(fd, buffer.data() + done, buffer.size() - done, off_t(p.offset + done));
        if (n <= 0) {
          close(fd);
          return finish_group(group_count_, "'" + path_ + "' ends inside tensor '" + ggml_get_name(p.tensor) + "'");
        }
        done += size_t(n);
      }
      ggml_backend_tensor_set(p.tensor, buffer.data(), 0, buffer.size());
    }
    finish_group(group, "");
  }
  close(fd);
}

void StreamingLoad::read_ahead(int fd, size_t first) const {
  // pending_ is in group order: the next group starts after the tensors of `first`'s group.
  if (first >= pending_.size()) return;
  size_t i = first;
  while (i < pending_.size() && pending_[i].group == pending_[first].group) ++i;
  for (size_t j = i; j < pending_.size() && pending_[j].group == pending_[i].group; ++j)
    if (pending_[j].in_file)
      posix_fadvise(fd, off_t(pending_[j].offset), off_t(ggml_nbytes(pending_[j].tensor)), POSIX_FADV_WILLNEED);
}

void StreamingLoad::finish_group(int group, const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error.empty()) {
      error_ = error;
      failed_ = true;
    } else {
      groups_done_ = group + 1;
    }
  }
  if (error.empty() && group + 1 == group_count_) all_done_ = true;
  loaded_.notify_all();
}

bool StreamingLoad::wait_for_group(int group) {
  std::unique_lock<std::mutex> lock(mutex_);
  loaded_.wait(lock, [&] { return groups_done_ > group || failed_; });
  return !failed_;
}

bool StreamingLoad::gate(ggml_tensor* node, bool ask, void* self) {
  auto* s = static_cast<StreamingLoad*>(self);
  if (s->all_done_) return !ask;
  if (!ask) return !s->failed_;  // false cancels the pass
  // Before the range holding this node is computed: the weights it reads must be in.
  for (const ggml_tensor* src : node->src) {
    if (!src) continue;
    auto found = s->group_by_tensor_.find(src->view_src ? src->view_src : src);
    if (found != s->group_by_tensor_.end() && !s->wait_for_group(found->second)) return true;
  }
  // Ends the range at each block's output, so that a wait for the next block's weights does
  // not hold back this block's computation.
  return s->failed_ || std::strncmp(node->name, "l_out-", 6) == 0;
}

}  // namespace sw
