// A sum in one fixed binary tree (docs/distributed.md), so that its rounding depends on the
// values alone, never on who added them. Leaves are pushed left to right; two neighbours of
// one level are added (left + right) as soon as both are there, making one of the next
// level; finish() adds what remains right to left. A worker that owns 2^k neighbouring
// leaves sums them to one node of level k; pushing every worker's node, at level k, in
// rank order, completes the tree of all the leaves exactly as one process pushing every
// leaf would.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace sx::distributed {

template <class T>
class OrderedSum {
 public:
  // add(left, right) leaves left + right in `left`; `right` is the caller's after (to reuse).
  using Add = std::function<void(T& left, T& right)>;
  explicit OrderedSum(Add add) : add_(std::move(add)) {}

  void push(T value, int level = 0) {
    stack_.push_back({std::move(value), level});
    while (stack_.size() >= 2 && stack_[stack_.size() - 2].level == stack_.back().level) add_top();
  }
  // The nodes pushed and not yet added: 1 once 2^k leaves are pushed.
  size_t pending() const { return stack_.size(); }
  int top_level() const { return stack_.back().level; }
  // The sum of all that was pushed (at least one); the sum starts over.
  T finish() {
    while (stack_.size() >= 2) add_top();
    T out = std::move(stack_.back().value);
    stack_.clear();
    return out;
  }

 private:
  struct Node {
    T value;
    int level;
  };
  void add_top() {
    Node right = std::move(stack_.back());
    stack_.pop_back();
    add_(stack_.back().value, right.value);
    ++stack_.back().level;
  }

  Add add_;
  std::vector<Node> stack_;
};

// Whether n is 2^k, k >= 0.
constexpr bool is_power_of_two(long long n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace sx::distributed
