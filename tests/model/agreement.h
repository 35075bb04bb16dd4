// Comparing two procedures that must give the same answer (drafts, guesses, padding, the modes
// that share a grammar) where agreement is a property of the procedures, not of one CPU.
//
// Two procedures that run passes of different shapes get logits that differ in the last bits
// (other kernels, other summation orders), and so does one procedure on another CPU. Greedy
// decoding turns that into different text wherever two tokens are nearly tied. So the answers
// are compared up to the first decision that either made by a margin below kNearTie logits;
// past it they may part. Both answers record their decisions (CallStats::decisions).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "schemaweaver/engine.h"

// Kernel rounding moves a logit by a few hundredths (Weaver.WriteBackEqualsSerialPrefill
// measures it); a decision by a tenth of a logit or more comes out the same on every machine.
constexpr float kNearTie = 0.1f;

// A fixed pass-cost curve (ms by tokens per pass, 4 cheaper than 3), so that padding and draft
// lengths, and with them the pass shapes, are the same on every machine and in every run.
inline const std::vector<double> kFixedPassCosts = {10, 13, 16, 15, 21, 23, 25, 27};

// A session on `model` with the fixed curve: nothing cached from an earlier run is read.
inline std::unique_ptr<sw::Session> fresh_session(std::shared_ptr<const sw::Model> model) {
  auto session = std::make_unique<sw::Session>(std::move(model));
  session->use_pass_costs(kFixedPassCosts);
  return session;
}

inline sw::CallResult fresh_call(std::shared_ptr<const sw::Model> model, const std::vector<sw::Message>& messages,
                                 const std::vector<sw::ToolSpec>& tools, const sw::CallOptions& options) {
  return fresh_session(std::move(model))->call(messages, tools, options);
}

struct Answer {
  std::string text;
  std::vector<sw::Decision> decisions;
};
inline Answer answer_of(const sw::CallResult& r) { return {r.text, r.stats.decisions}; }

struct Comparison {
  size_t decided = 0;  // leading bytes that must agree: up to the first near-tie of either answer
  bool whole = false;  // neither answer has a near-tie: they must be equal
  bool agree = false;
  std::string report;  // where they part and the margins around it
};

inline size_t first_near_tie(const Answer& a) {
  for (const sw::Decision& d : a.decisions) {
    if (d.margin < kNearTie) return d.offset;
  }
  return std::string::npos;
}

inline Comparison compare_where_decided(const Answer& a, const Answer& b) {
  Comparison c;
  size_t tie = std::min(first_near_tie(a), first_near_tie(b));
  c.whole = tie == std::string::npos;
  c.decided = c.whole ? std::max(a.text.size(), b.text.size()) : tie;
  c.agree = a.text.compare(0, c.decided, b.text, 0, c.decided) == 0 && (!c.whole || a.text == b.text);
  size_t part = 0;
  while (part < a.text.size() && part < b.text.size() && a.text[part] == b.text[part]) ++part;
  std::ostringstream out;
  out << "compared " << (c.whole ? "whole answers" : "up to byte " + std::to_string(c.decided) + " (a near-tie)")
      << ", they part at byte " << part << "\n  a: " << a.text << "\n  b: " << b.text << "\n  margins near there:";
  for (const Answer* x : {&a, &b}) {
    out << (x == &a ? "\n  a:" : "\n  b:");
    for (const sw::Decision& d : x->decisions) {
      if (d.offset + 24 >= part && d.offset <= part + 8) out << " @" << d.offset << "=" << d.margin;
    }
  }
  c.report = out.str();
  return c;
}

inline testing::AssertionResult agree_where_decided(const Answer& a, const Answer& b) {
  Comparison c = compare_where_decided(a, b);
  std::cout << "[ compared ] " << (c.whole ? "whole answers" : std::to_string(c.decided) + " bytes, to a near-tie")
            << " of " << a.text.size() << " and " << b.text.size() << "\n";
  if (c.agree) return testing::AssertionSuccess();
  return testing::AssertionFailure() << c.report;
}
inline testing::AssertionResult agree_where_decided(const sw::CallResult& a, const sw::CallResult& b) {
  return agree_where_decided(answer_of(a), answer_of(b));
}
