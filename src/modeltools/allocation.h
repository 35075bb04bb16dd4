// Choosing a weight type per matrix under a budget: in bytes (a smaller file, a faster cold
// start) or in time (a faster pass on this CPU), with the least added error.
#pragma once

#include <ggml.h>

#include <cstdint>
#include <vector>

namespace sw {

struct TypeChoice {
  ggml_type type;
  uint64_t bytes = 0;
  double cost = 0;   // against the budget: bytes, or the estimated time of a pass (ms)
  double error = 0;  // the output error the type adds (relative, or nats once weighed)
};

// Keeps the choices on the lower convex hull of (cost, error), cheapest first: along it each
// step up buys less error per unit of cost than the one before, so taking steps greedily by
// the best rate is optimal. A choice that costs more and errs no less is dropped.
std::vector<TypeChoice> lower_hull(std::vector<TypeChoice> choices);

// The least cost any choice of each matrix takes (the cheapest of each).
double least_cost(const std::vector<std::vector<TypeChoice>>& hulls);

// From every matrix at its cheapest choice, takes whichever step up its hull removes the most
// error per unit of cost while the total stays within `budget`. The index chosen per matrix.
std::vector<size_t> allocate(const std::vector<std::vector<TypeChoice>>& hulls, double budget);

}  // namespace sw
