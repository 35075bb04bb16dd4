// One BFCL case by id, from the data folder the set-up fetched (for model tests).
#pragma once

#include <stdexcept>
#include <string>

#include "bfcl/bfcl.h"

// The category is the id without its trailing "_<number>" ("live_simple_28-7-1" -> live_simple).
inline sw::bfcl::Case bfcl_case(const std::string& id) {
  std::string category = id.substr(0, id.rfind('_'));
  for (sw::bfcl::Case& c : sw::bfcl::load_standard_categories(SW_TEST_BFCL, {category})) {
    if (c.id == id) return c;
  }
  throw std::runtime_error("no BFCL case " + id);
}
