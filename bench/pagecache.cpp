// The page cache for a file: how much of it is cached, and dropping it for a cold start.
//
//   pagecache resident FILE...   prints {"file", "bytes", "resident_bytes"} per file as JSON lines
//   pagecache evict FILE...      drops the files' cached pages (posix_fadvise DONTNEED), then
//                                checks with mincore that none are left; exit 1 if some are
//
// A page stays cached while a process maps it, so evict fails (rather than pretend) when
// another process still holds the model.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Residency {
  uint64_t bytes = 0;
  uint64_t resident_bytes = 0;
};

// A read-only descriptor, or -1 after saying why.
int open_file(const char* path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) std::fprintf(stderr, "pagecache: cannot open '%s': %s\n", path, std::strerror(errno));
  return fd;
}

// Maps the file without touching it and asks the kernel which of its pages are cached.
bool residency(const char* path, Residency& out) {
  int fd = open_file(path);
  if (fd < 0) return false;
  struct stat st {};
  fstat(fd, &st);
  out.bytes = uint64_t(st.st_size);
  out.resident_bytes = 0;
  if (st.st_size == 0) {
    close(fd);
    return true;
  }
  void* map = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    std::fprintf(stderr, "pagecache: cannot map '%s': %s\n", path, std::strerror(errno));
    return false;
  }
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> pages((size_t(st.st_size) + page - 1) / page);
  bool ok = mincore(map, size_t(st.st_size), pages.data()) == 0;
  if (!ok) std::fprintf(stderr, "pagecache: mincore failed on '%s': %s\n", path, std::strerror(errno));
  for (size_t i = 0; ok && i < pages.size(); ++i)
    if (pages[i] & 1) out.resident_bytes += std::min<uint64_t>(page, out.bytes - i * page);
  munmap(map, size_t(st.st_size));
  return ok;
}

bool evict(const char* path) {
  int fd = open_file(path);
  if (fd < 0) return false;
  fdatasync(fd);  // pages written and not yet on disk are not dropped
  int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  if (rc != 0) {
    std::fprintf(stderr, "pagecache: posix_fadvise failed on '%s': %s\n", path, std::strerror(rc));
    return false;
  }
  Residency r;
  if (!residency(path, r)) return false;
  if (r.resident_bytes > 0) {
    std::fprintf(
        stderr, "pagecache: %llu of %llu bytes of '%s' are still cached (is it mapped by a process?)\n",
        static_cast<unsigned long long>(r.resident_bytes), static_cast<unsigned long long>(r.bytes), path);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (argc < 3 || (command != "resident" && command != "evict")) {
    std::fprintf(stderr, "usage: pagecache resident|evict FILE...\n");
    return 2;
  }
  bool ok = true;
  for (int i = 2; i < argc; ++i) {
    if (command == "evict") {
      ok = evict(argv[i]) && ok;
      continue;
    }
    Residency r;
    if (!residency(argv[i], r)) {
      ok = false;
      continue;
    }
    std::printf("{\"file\": \"%s\", \"bytes\": %llu, \"resident_bytes\": %llu}\n", argv[i],
                static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.resident_bytes));
  }
  return ok ? 0 : 1;
}
