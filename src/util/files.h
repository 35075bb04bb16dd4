// Files this library writes and names: a whole file or none, and names that stay the same from
// one run, build or machine to the next.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace sw {

// Writes `path` so that no reader (another session, another process) ever sees it half
// written: `write` fills a partial file beside it, named for this process and thread, which then
// replaces `path` in one rename. `write` throws Error where it cannot write; the partial file is
// removed and the error goes on. A failed rename throws Error naming `what` and `path`.
void write_atomically(const std::string& path, const std::string& what,
                      const std::function<void(const std::string& partial)>& write);

// FNV-1a of bytes, 64 bits, continuing `hash`: the same everywhere (std::hash is not), for the
// names of cache files.
constexpr uint64_t kStableHashStart = 0xcbf29ce484222325ULL;
uint64_t stable_hash(const void* data, size_t size, uint64_t hash = kStableHashStart);
// The same of a text, as 16 hex digits.
std::string stable_hash_hex(const std::string& text);

}  // namespace sw
