// List, vector and plist builtins, and the higher-order functions over them.
// Lists are always proper. A function that takes "a sequence" takes a list or a vector
// and gives back the same kind (the first sequence's kind, when it takes several).
// Every function that builds n items charges the evaluation-step budget n, and is
// refused (E-MEM-001) when n items would pass the memory limit.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/memory.h"
#include "lang/builtins/builtins.h"
#include "lang/builtins/tensor_args.h"
#include "lang/printer.h"

namespace sx::lang {
namespace {

// The items of argument i, a list or a vector; E-EVAL-004 otherwise.
std::vector<Value> items_of(const Args& a, size_t i) {
  if (a[i].is_list()) return list_items(a[i]);
  if (a[i].is(Type::Vector)) return a[i].as<Vector>()->items;
  a.type_error(i, "a list or a vector");
}

// A list, or a vector when `vector`.
Value make_like(bool vector, std::vector<Value> items) {
  return vector ? make_vector(std::move(items)) : list(std::move(items));
}

// Charges the step budget for building n items, then refuses n items past the memory
// limit: called before the items are built, where a count such as `range`'s could ask
// for any number.
void charge(const Args& a, size_t n) {
  a.interp.charge(n, a.call);
  check_items_memory(a, n);
}

// A non-negative integer argument: a count or an index.
size_t count(const Args& a, size_t i) {
  int64_t n = a.integer(i);
  if (n < 0) a.type_error(i, "a non-negative integer");
  return static_cast<size_t>(n);
}

// Calls the function in argument `fn` on `args`; the arguments' spans are the call's.
Value call(const Args& a, size_t fn, std::vector<Value> args) {
  std::vector<Span> spans(args.size(), a.span(fn));
  return a.interp.apply(a[fn], args, spans, a.call);
}

// --- Construction and access ------------------------------------------------------------

Value make_list(Args& a) {
  charge(a, a.size());
  return list(std::vector<Value>(a.values.begin(), a.values.end()));
}

Value make_vector_of(Args& a) {
  charge(a, a.size());
  return make_vector(std::vector<Value>(a.values.begin(), a.values.end()));
}

// (cons x list): lists are always proper, so the tail must be a list.
Value cons_cell(Args& a) {
  a.list(1);
  charge(a, 1);
  return cons(a[0], a[1]);
}

// The i-th item of a list or vector, or nil past the end (first, second, third).
Value item_or_nil(Args& a, size_t index) {
  if (a[0].is(Type::Vector)) {
    const auto& items = a[0].as<Vector>()->items;
    return index < items.size() ? items[index] : Value();
  }
  if (!a[0].is_list()) a.type_error(0, "a list or a vector");
  Cons* c = as_cons(a[0]);
  for (size_t i = 0; c && i < index; ++i) c = next(c);
  return c ? c->car : Value();
}

Value last_item(Args& a) {
  std::vector<Value> items = items_of(a, 0);
  return items.empty() ? Value() : items.back();
}

// (rest seq): everything after the first item; nil, or an empty vector, when there is none.
Value rest_of(Args& a) {
  if (a[0].is(Type::Vector)) {
    const auto& items = a[0].as<Vector>()->items;
    if (items.empty()) return make_vector({});
    charge(a, items.size() - 1);
    return make_vector(std::vector<Value>(items.begin() + 1, items.end()));
  }
  if (!a[0].is_list()) a.type_error(0, "a list or a vector");
  Cons* c = as_cons(a[0]);
  return c ? c->cdr : Value();
}

[[noreturn]] void out_of_range(const Args& a, size_t i, int64_t index, size_t length) {
  fail("E-EVAL-015", a.span(i),
       fmt::format("index {} is out of range for `{}` of length {}", index, a.function, length),
       length == 0 ? "the sequence is empty" : fmt::format("valid indices are 0 to {}", length - 1));
}

// (nth index seq), as in Common Lisp.
Value nth_item(Args& a) {
  if (!a[0].is(Type::Int) && a[1].is(Type::Int) && (a[0].is_list() || a[0].is(Type::Vector))) {
    fail("E-EVAL-004", a.span(0), "`nth` takes the index first: (nth index seq)",
         fmt::format("write (nth {} {})", printed_in_message(a[1]), printed_in_message(a[0])));
  }
  int64_t index = a.integer(0);
  if (a[1].is(Type::Vector)) {
    const auto& items = a[1].as<Vector>()->items;
    if (index < 0 || static_cast<size_t>(index) >= items.size()) out_of_range(a, 0, index, items.size());
    return items[static_cast<size_t>(index)];
  }
  if (!a[1].is_list()) a.type_error(1, "a list or a vector");
  Cons* c = as_cons(a[1]);
  for (int64_t i = 0; c && i < index; ++i) c = next(c);
  if (index < 0 || !c) out_of_range(a, 0, index, list_length(a[1]));
  return c->car;
}

size_t code_points(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

// (length x): items of a list or vector, code points of a string.
Value length_of(Args& a) {
  if (a[0].is(Type::String)) return Value::integer(static_cast<int64_t>(code_points(string_of(a[0]))));
  if (a[0].is(Type::Vector)) return Value::integer(static_cast<int64_t>(a[0].as<Vector>()->items.size()));
  if (a[0].is_list()) return Value::integer(static_cast<int64_t>(list_length(a[0])));
  a.type_error(0, "a list, a vector or a string");
}

Value is_empty(Args& a) {
  if (a[0].is(Type::String)) return Value::boolean(string_of(a[0]).empty());
  if (a[0].is(Type::Vector)) return Value::boolean(a[0].as<Vector>()->items.empty());
  if (a[0].is_list()) return Value::boolean(a[0].is_nil());
  a.type_error(0, "a list, a vector or a string");
}

// (concat seq...): all lists or all vectors, the kind of the first; (concat) is nil.
Value concat_all(Args& a) {
  if (a.size() == 0) return Value();
  if (as_tensor(a[0])) return tensor_concat(a);
  if (a.keywords_at() < a.size()) {
    fail("E-EVAL-006", a.span(a.keywords_at()), "`concat` takes `:axis` to join tensors, not lists or vectors");
  }
  bool vector = a[0].is(Type::Vector);
  std::vector<Value> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (vector != a[i].is(Type::Vector) || !(vector || a[i].is_list())) {
      a.type_error(i, vector ? "a vector, as the first argument is" : "a list, as the first argument is");
    }
    std::vector<Value> items = items_of(a, i);
    out.insert(out.end(), items.begin(), items.end());
  }
  charge(a, out.size());
  return make_like(vector, std::move(out));
}

Value reverse_seq(Args& a) {
  std::vector<Value> items = items_of(a, 0);
  charge(a, items.size());
  return make_like(a[0].is(Type::Vector), std::vector<Value>(items.rbegin(), items.rend()));
}

// (take n seq) and (drop n seq): n past the end takes everything or drops everything.
Value take_or_drop(Args& a, bool take) {
  size_t n = count(a, 0);
  std::vector<Value> items = items_of(a, 1);
  n = std::min(n, items.size());
  auto split = items.begin() + static_cast<std::ptrdiff_t>(n);
  std::vector<Value> out = take ? std::vector<Value>(items.begin(), split) : std::vector<Value>(split, items.end());
  charge(a, out.size());
  return make_like(a[1].is(Type::Vector), std::move(out));
}

// (subseq seq start [end]), as in Common Lisp: items start..end-1 of a list, a vector or a
// string (code points). Not `slice`: that is the tensor operation.
Value subseq(Args& a) {
  size_t length;
  std::vector<Value> items;
  if (a[0].is(Type::String)) length = code_points(string_of(a[0]));
  else if (a[0].is_list() || a[0].is(Type::Vector)) length = (items = items_of(a, 0)).size();
  else a.type_error(0, "a list, a vector or a string");
  int64_t start = a.integer(1);
  int64_t end = a.size() > 2 ? a.integer(2) : static_cast<int64_t>(length);
  if (start < 0 || static_cast<size_t>(start) > length) out_of_range(a, 1, start, length);
  if (end < 0 || static_cast<size_t>(end) > length) out_of_range(a, 2, end, length);
  if (start > end) {
    fail("E-EVAL-015", a.span(2), fmt::format("`subseq` ends at {}, before its start {}", end, start),
         "the end index is exclusive and at least the start");
  }
  if (a[0].is(Type::String)) {
    const std::string& text = string_of(a[0]);
    size_t cp = 0, from = text.size(), to = text.size();
    for (size_t b = 0; b < text.size(); ++b) {
      if ((static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) continue;
      if (cp == static_cast<size_t>(start)) from = b;
      if (cp == static_cast<size_t>(end)) to = b;
      ++cp;
    }
    return make_string(text.substr(from, to - from));
  }
  charge(a, static_cast<size_t>(end - start));
  return make_like(a[0].is(Type::Vector), std::vector<Value>(items.begin() + start, items.begin() + end));
}

// --- Higher-order functions ---------------------------------------------------------------

// (map f seq...): f over the sequences in step, stopping at the shortest.
Value map_seqs(Args& a) {
  a.callable(0);
  std::vector<std::vector<Value>> seqs;
  size_t n = std::numeric_limits<size_t>::max();
  for (size_t i = 1; i < a.size(); ++i) {
    seqs.push_back(items_of(a, i));
    n = std::min(n, seqs.back().size());
  }
  charge(a, n);
  std::vector<Value> out;
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    std::vector<Value> args;
    for (const auto& seq : seqs) args.push_back(seq[k]);
    out.push_back(call(a, 0, std::move(args)));
  }
  return make_like(a[1].is(Type::Vector), std::move(out));
}

Value filter_seq(Args& a) {
  a.callable(0);
  std::vector<Value> out;
  for (Value& item : items_of(a, 1)) {
    if (call(a, 0, {item}).truthy()) out.push_back(std::move(item));
  }
  charge(a, out.size());
  return make_like(a[1].is(Type::Vector), std::move(out));
}

// (fold f init seq): calls (f acc x) for each item, left to right.
Value fold_seq(Args& a) {
  a.callable(0);
  Value acc = a[1];
  for (Value& item : items_of(a, 2)) acc = call(a, 0, {std::move(acc), std::move(item)});
  return acc;
}

// (range n), (range start end), (range start end step): integers, or floats when any is one.
Value range_of(Args& a) {
  for (size_t i = 0; i < a.size(); ++i) a.number(i);
  Value start = a.size() == 1 ? Value::integer(0) : a[0];
  Value end = a.size() == 1 ? a[0] : a[1];
  Value step = a.size() == 3 ? a[2] : Value::integer(1);
  if (step.as_double() == 0) {
    fail("E-EVAL-004", a.span(2), "`range` with a step of zero never ends", "give a positive or negative step");
  }
  bool floats = start.is(Type::Float) || end.is(Type::Float) || step.is(Type::Float);
  std::vector<Value> out;
  if (!floats) {
    // Unsigned arithmetic: the distance between two int64s fits in a uint64.
    int64_t s = start.as_int(), e = end.as_int(), d = step.as_int();
    bool up = d > 0;
    uint64_t magnitude = up ? static_cast<uint64_t>(d) : 0 - static_cast<uint64_t>(d);
    uint64_t distance = up ? (e > s ? static_cast<uint64_t>(e) - static_cast<uint64_t>(s) : 0)
                           : (s > e ? static_cast<uint64_t>(s) - static_cast<uint64_t>(e) : 0);
    uint64_t n = distance == 0 ? 0 : (distance - 1) / magnitude + 1;
    charge(a, n);
    out.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      out.push_back(Value::integer(static_cast<int64_t>(static_cast<uint64_t>(s) + i * static_cast<uint64_t>(d))));
    }
    return list(std::move(out));
  }
  double s = start.as_double(), e = end.as_double(), d = step.as_double();
  double n = std::ceil((e - s) / d);
  if (std::isnan(n) || std::isinf(n)) {
    fail("E-EVAL-004", a.call,
         fmt::format("`range` from {} to {} by {} does not have a finite length", printed_in_message(start),
                     printed_in_message(end), printed_in_message(step)));
  }
  size_t items = n > 0 ? static_cast<size_t>(n) : 0;
  charge(a, items);
  out.reserve(items);
  for (size_t i = 0; i < items; ++i) out.push_back(Value::number(s + static_cast<double>(i) * d));
  return list(std::move(out));
}

// (repeat n f): the list of (f i) for i from 0 to n-1.
Value repeat_calls(Args& a) {
  size_t n = count(a, 0);
  a.callable(1);
  charge(a, n);
  std::vector<Value> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(call(a, 1, {Value::integer(static_cast<int64_t>(i))}));
  return list(std::move(out));
}

// (apply f a b seq): calls f with a, b and the items of seq.
Value apply_spread(Args& a) {
  a.callable(0);
  std::vector<Value> args(a.values.begin() + 1, a.values.end() - 1);
  std::vector<Span> spans;
  for (size_t i = 1; i + 1 < a.size(); ++i) spans.push_back(a.span(i));
  std::vector<Value> tail = items_of(a, a.size() - 1);
  charge(a, tail.size());
  for (Value& item : tail) {
    args.push_back(std::move(item));
    spans.push_back(a.span(a.size() - 1));
  }
  return a.interp.apply(a[0], args, spans, a.call);
}

// (zip seq...): tuples of the items in step, stopping at the shortest; the first's kind.
Value zip_seqs(Args& a) {
  std::vector<std::vector<Value>> seqs;
  size_t n = std::numeric_limits<size_t>::max();
  for (size_t i = 0; i < a.size(); ++i) {
    seqs.push_back(items_of(a, i));
    n = std::min(n, seqs.back().size());
  }
  bool vector = a[0].is(Type::Vector);
  charge(a, n * (a.size() + 1));
  std::vector<Value> out;
  for (size_t k = 0; k < n; ++k) {
    std::vector<Value> tuple;
    for (const auto& seq : seqs) tuple.push_back(seq[k]);
    out.push_back(make_like(vector, std::move(tuple)));
  }
  return make_like(vector, std::move(out));
}

// (enumerate seq): (index item) pairs.
Value enumerate_seq(Args& a) {
  std::vector<Value> items = items_of(a, 0);
  bool vector = a[0].is(Type::Vector);
  charge(a, items.size() * 3);
  std::vector<Value> out;
  for (size_t i = 0; i < items.size(); ++i) {
    out.push_back(make_like(vector, {Value::integer(static_cast<int64_t>(i)), items[i]}));
  }
  return make_like(vector, std::move(out));
}

// The default order of `sort`: numbers by value, strings by code point, symbols and
// keywords by name; anything else, or a mix, is E-EVAL-004.
bool default_less(const Args& a, const Value& x, const Value& y) {
  if (x.is_number() && y.is_number()) {
    if (x.is(Type::Int) && y.is(Type::Int)) return x.as_int() < y.as_int();
    return x.as_double() < y.as_double();
  }
  if (x.is(Type::String) && y.is(Type::String)) return string_of(x) < string_of(y);
  if ((x.is(Type::Keyword) || x.is(Type::Symbol)) && x.type() == y.type()) {
    return x.as<Symbol>()->name < y.as<Symbol>()->name;
  }
  fail(
      "E-EVAL-004", a.span(0),
      fmt::format("`sort` cannot order `{}` and `{}` without a function", printed_in_message(x), printed_in_message(y)),
      "without one it sorts numbers, strings, symbols or keywords; pass (sort seq less-fn)");
}

// (sort seq [less]): a stable merge sort. Written out rather than std::stable_sort so that
// a comparison that throws or contradicts itself cannot leave the sort in undefined behavior.
Value sort_seq(Args& a) {
  std::vector<Value> items = items_of(a, 0);
  if (a.size() > 1) a.callable(1);
  auto less = [&](const Value& x, const Value& y) {
    if (a.size() > 1) return call(a, 1, {x, y}).truthy();
    return default_less(a, x, y);
  };
  charge(a, items.size());
  std::vector<Value> buffer(items.size());
  for (size_t width = 1; width < items.size(); width *= 2) {
    for (size_t lo = 0; lo < items.size(); lo += 2 * width) {
      size_t mid = std::min(lo + width, items.size()), hi = std::min(lo + 2 * width, items.size());
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) buffer[k++] = less(items[j], items[i]) ? items[j++] : items[i++];
      while (i < mid) buffer[k++] = items[i++];
      while (j < hi) buffer[k++] = items[j++];
    }
    std::swap(items, buffer);
  }
  return make_like(a[0].is(Type::Vector), std::move(items));
}

// (position seq x): the index of the first item `equal` to x, or of a substring; nil if none.
Value position_of(Args& a) {
  if (!a[0].is(Type::String) && !a[0].is_list() && !a[0].is(Type::Vector)) {
    a.type_error(0, "a list, a vector or a string");
  }
  if (a[0].is(Type::String)) {
    size_t at = string_of(a[0]).find(a.string(1));
    if (at == std::string::npos) return Value();
    return Value::integer(static_cast<int64_t>(code_points(string_of(a[0]).substr(0, at))));
  }
  std::vector<Value> items = items_of(a, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    if (equal(items[i], a[1])) return Value::integer(static_cast<int64_t>(i));
  }
  return Value();
}

Value contains(Args& a) { return Value::boolean(!position_of(a).is_nil()); }

// (vec seq) and (to-list seq): the same items as a vector, or as a list.
Value to_vector(Args& a) {
  std::vector<Value> items = items_of(a, 0);
  charge(a, items.size());
  return make_vector(std::move(items));
}

Value to_list(Args& a) {
  if (a[0].is_list()) return a[0];
  std::vector<Value> items = items_of(a, 0);
  charge(a, items.size());
  return list(std::move(items));
}

// --- Plists: (:key value :key value ...) -----------------------------------------------

std::vector<Value> plist_items(const Args& a, size_t i) {
  std::vector<Value> items = list_items(a.list(i));
  if (items.size() % 2 != 0) {
    fail("E-EVAL-004", a.span(i),
         fmt::format("argument {} of `{}` must be a plist, but `{}` has an odd number of items ({})", i + 1, a.function,
                     printed_in_message(a[i]), items.size()),
         "a plist alternates keys and values: (:a 1 :b 2)");
  }
  return items;
}

// (getf plist key [default])
Value get_field(Args& a) {
  std::vector<Value> items = plist_items(a, 0);
  for (size_t i = 0; i < items.size(); i += 2) {
    if (equal(items[i], a[1])) return items[i + 1];
  }
  return a.size() > 2 ? a[2] : Value();
}

// (put plist key value): a new plist with key's value replaced, or added at the end.
Value put_field(Args& a) {
  std::vector<Value> items = plist_items(a, 0);
  bool found = false;
  for (size_t i = 0; i < items.size() && !found; i += 2) {
    if (equal(items[i], a[1])) items[i + 1] = a[2], found = true;
  }
  if (!found) items.insert(items.end(), {a[1], a[2]});
  charge(a, items.size());
  return list(std::move(items));
}

Value plist_keys(Args& a) {
  std::vector<Value> items = plist_items(a, 0);
  std::vector<Value> keys;
  for (size_t i = 0; i < items.size(); i += 2) keys.push_back(items[i]);
  charge(a, keys.size());
  return list(std::move(keys));
}

}  // namespace

void check_items_memory(const Args& a, size_t n) {
  // What one item costs at most: a cons cell, and its value while the items are gathered.
  constexpr double kItemBytes = sizeof(Cons) + sizeof(Value);
  graph::check_memory(static_cast<double>(n) * kItemBytes,
                      [&] { return fmt::format("`{}`: a list of {} items", a.function, n); });
}

void install_list_builtins(Interpreter& in) {
  install_rows(
      in, "Lists, vectors and plists",
      {
          {"list", make_list, "(&rest items)", "A list of the items.",
           "(list 1 \"two\" :three)\n;; => (1 \"two\" :three)"},
          {"vector", make_vector_of, "(&rest items)", "A vector of the items; [a b] is the same.",
           "(vector 1 (+ 1 1))\n;; => [1 2]"},
          {"cons", cons_cell, "(item list)", "The list with item in front.", "(cons 1 (list 2 3))\n;; => (1 2 3)"},
          {"first", [](Args& a) { return item_or_nil(a, 0); }, "(seq)",
           "The first item of a list or vector, or nil when it is empty.", "(first [7 8 9])\n;; => 7"},
          {"second", [](Args& a) { return item_or_nil(a, 1); }, "(seq)", "The second item, or nil.",
           "(second [7 8 9])\n;; => 8"},
          {"third", [](Args& a) { return item_or_nil(a, 2); }, "(seq)", "The third item, or nil.",
           "(third [7 8 9])\n;; => 9"},
          {"rest", rest_of, "(seq)", "Everything after the first item, of the same kind.",
           "(rest (list 1 2 3))\n;; => (2 3)"},
          {"last", last_item, "(seq)", "The last item, or nil when it is empty.", "(last [7 8 9])\n;; => 9"},
          {"nth", nth_item, "(index seq)", "The item at index (from 0), as in Common Lisp; E-EVAL-015 past the end.",
           "(nth 1 [7 8 9])\n;; => 8"},
          {"length", length_of, "(seq)", "The items of a list or vector, or the characters of a string.",
           "(list (length [1 2 3]) (length \"héllo\"))\n;; => (3 5)"},
          {"empty?", is_empty, "(seq)", "Whether a list, vector or string has no items.",
           "(list (empty? []) (empty? \"a\"))\n;; => (true false)"},
          {"concat", concat_all, "(&rest seqs &key axis)",
           "Lists or vectors joined, of the first one's kind; tensors joined along :axis (default 0).",
           "(concat [1 2] [3] [4 5])\n;; => [1 2 3 4 5]"},
          {"reverse", reverse_seq, "(seq)", "The items in reverse order.", "(reverse (list 1 2 3))\n;; => (3 2 1)"},
          {"take", [](Args& a) { return take_or_drop(a, true); }, "(n seq)",
           "The first n items (all of them when there are fewer).", "(take 2 [1 2 3])\n;; => [1 2]"},
          {"drop", [](Args& a) { return take_or_drop(a, false); }, "(n seq)", "Everything after the first n items.",
           "(drop 2 [1 2 3])\n;; => [3]"},
          {"subseq", subseq, "(seq start &optional end)",
           "Items (or characters) start to end-1, as in Common Lisp; not `slice`, which is for tensors.",
           "(list (subseq [1 2 3 4] 1 3) (subseq \"hello\" 1))\n;; => ([2 3] \"ello\")"},
          {"map", map_seqs, "(f seq &rest seqs)",
           "f called on the items of the sequences in step, stopping at the shortest; the first one's kind.",
           "(map + [1 2 3] [10 20 30])\n;; => [11 22 33]"},
          {"filter", filter_seq, "(f seq)", "The items for which f is true.",
           "(filter (lambda (x) (> x 1)) (list 1 2 3))\n;; => (2 3)"},
          {"fold", fold_seq, "(f init seq)", "Calls (f acc item) on each item left to right, from acc = init.",
           "(fold + 0 (list 1 2 3))\n;; => 6"},
          {"range", range_of, "(end-or-start &optional end step)",
           "(range n) is 0 to n-1; (range start end [step]) counts from start by step, stopping before end.",
           "(list (range 4) (range 1 10 3))\n;; => ((0 1 2 3) (1 4 7))"},
          {"repeat", repeat_calls, "(n f)", "The list of (f i) for i from 0 to n-1.",
           "(repeat 3 (lambda (i) (* i i)))\n;; => (0 1 4)"},
          {"apply", apply_spread, "(f arg &rest args)",
           "Calls f with the arguments before the last, then the items of the last, a sequence.",
           "(apply + 1 2 (list 3 4))\n;; => 10"},
          {"zip", zip_seqs, "(seq &rest seqs)", "Tuples of the items in step, stopping at the shortest.",
           "(zip [1 2] [:a :b])\n;; => [[1 :a] [2 :b]]"},
          {"enumerate", enumerate_seq, "(seq)", "Pairs of each item's index and the item.",
           "(enumerate (list :a :b))\n;; => ((0 :a) (1 :b))"},
          {"sort", sort_seq, "(seq &optional less)",
           "The items in order: numbers, strings, symbols or keywords by themselves, or by (less a b). Stable.",
           "(list (sort [3 1 2]) (sort (list 1 2 3) >))\n;; => ([1 2 3] (3 2 1))"},
          {"position", position_of, "(seq item)",
           "The index of the first item `equal` to item (of a substring in a string), or nil.",
           "(list (position [:a :b] :b) (position \"hello\" \"l\"))\n;; => (1 2)"},
          {"contains?", contains, "(seq item)", "Whether seq has an item `equal` to item, or the substring.",
           "(contains? [1 2 3] 2)\n;; => true"},
          {"vec", to_vector, "(seq)", "The items as a vector.", "(vec (list 1 2))\n;; => [1 2]"},
          {"to-list", to_list, "(seq)", "The items as a list.", "(to-list [1 2])\n;; => (1 2)"},
          {"getf", get_field, "(plist key &optional default)",
           "The value after key in a plist (:key value ...), or default (nil).",
           "(getf (list :lr 0.1 :steps 100) :steps)\n;; => 100"},
          {"put", put_field, "(plist key value)", "A new plist with key's value replaced, or added at the end.",
           "(put (list :a 1) :b 2)\n;; => (:a 1 :b 2)"},
          {"keys", plist_keys, "(plist)", "The keys of a plist, in order.", "(keys (list :a 1 :b 2))\n;; => (:a :b)"},
      });
}

}  // namespace sx::lang
