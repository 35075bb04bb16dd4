// The server's request parser on arbitrary bodies: an OpenAI-style error (RequestError) or a
// request, nothing else.
#include <cstdint>
#include <string>

#include "schemaweaver/openai.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sw::openai::ChatRequest request =
        sw::openai::parse_chat_request(std::string(reinterpret_cast<const char*>(data), size));
    (void)request;
  } catch (const sw::openai::RequestError&) {
  }
  return 0;
}
