#include "modeltools/allocation.h"

#include <algorithm>

namespace sw {

std::vector<TypeChoice> lower_hull(std::vector<TypeChoice> choices) {
  std::sort(choices.begin(), choices.end(), [](const TypeChoice& a, const TypeChoice& b) {
    return a.cost < b.cost || (a.cost == b.cost && a.error < b.error);
  });
  std::vector<TypeChoice> hull;
  for (const TypeChoice& c : choices) {
    if (!hull.empty() && c.error >= hull.back().error) continue;  // costs more, errs no less
    while (hull.size() >= 2) {
      const TypeChoice& a = hull[hull.size() - 2];
      const TypeChoice& b = hull.back();
      // b is above the segment from a to c: going straight to c buys more per unit of cost.
      const double via_b = (a.error - b.error) / (b.cost - a.cost);
      const double direct = (a.error - c.error) / (c.cost - a.cost);
      if (via_b > direct) break;
      hull.pop_back();
    }
    hull.push_back(c);
  }
  return hull;
}

double least_cost(const std::vector<std::vector<TypeChoice>>& hulls) {
  double total = 0;
  for (const auto& hull : hulls) total += hull.front().cost;
  return total;
}

std::vector<size_t> allocate(const std::vector<std::vector<TypeChoice>>& hulls, double budget) {
  std::vector<size_t> chosen(hulls.size(), 0);
  double used = least_cost(hulls);
  while (true) {
    size_t best = hulls.size();
    double best_rate = 0;
    for (size_t m = 0; m < hulls.size(); ++m) {
      if (chosen[m] + 1 >= hulls[m].size()) continue;
      const TypeChoice& now = hulls[m][chosen[m]];
      const TypeChoice& next = hulls[m][chosen[m] + 1];
      if (used - now.cost + next.cost > budget) continue;
      const double rate = (now.error - next.error) / (next.cost - now.cost);
      if (best == hulls.size() || rate > best_rate) best = m, best_rate = rate;
    }
    if (best == hulls.size()) break;
    used += hulls[best][chosen[best] + 1].cost - hulls[best][chosen[best]].cost;
    chosen[best] += 1;
  }
  return chosen;
}

}  // namespace sw
