// schemaweaver/error.h - the error every public call throws, and the JSON type of the API.
//
// Every error a caller can cause (bad file, bad JSON, bad schema, prompt too long) is an Error
// whose message says what was wrong and where (the tool, the JSON path, the file).
#pragma once

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace sw {

// Ordered, so that argument and property order survive a round trip (the order a schema
// declares is the order a call writes).
using Json = nlohmann::ordered_json;

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sw
