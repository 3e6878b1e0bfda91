// The memory limit: the size syntax, the default, and the builder refusing a node over
// the limit before anything is allocated.
#include "graph/memory.h"

#include <unistd.h>

#include "device/device.h"
#include "test_util.h"

namespace sx::graph {
namespace {

TEST(MemoryLimit, ParsesSizes) {
  EXPECT_EQ(parse_size("1048576"), 1048576u);
  EXPECT_EQ(parse_size("64K"), 64u << 10);
  EXPECT_EQ(parse_size("512m"), 512u << 20);
  EXPECT_EQ(parse_size("8G"), uint64_t{8} << 30);
  EXPECT_EQ(parse_size("2t"), uint64_t{2} << 40);
  EXPECT_EQ(parse_size("16777215T"), uint64_t{16777215} << 40);  // the largest in T
}

TEST(MemoryLimit, RefusesWhatIsNotASize) {
  for (const char* text : {"", "0", "0G", "abc", "-1", "+1", " 8G", "8G ", "8GB", "1.5G", "8P", "G", "16777216T",
                           "18446744073709551616"}) {
    EXPECT_EQ(parse_size(text), std::nullopt) << text;
  }
}

TEST(MemoryLimit, DefaultIsAPartOfTheMachine) {
  uint64_t limit = device::default_memory_limit();
  auto physical = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  EXPECT_GT(limit, 0u);
  EXPECT_LE(limit, physical / 4 * 3);
  EXPECT_EQ(limit, device::default_memory_limit());  // read once
}

// Sets the limit for one test, and puts the previous one back.
class WithLimit {
 public:
  explicit WithLimit(uint64_t bytes) : previous_(memory_limit()) { set_memory_limit(bytes); }
  ~WithLimit() { set_memory_limit(previous_); }

 private:
  uint64_t previous_;
};

TEST(MemoryLimit, BuilderRefusesANodeOverTheLimit) {
  WithLimit limit(1 << 20);
  Graph g;
  Builder b(g);
  b.input("small", {256, 1024}, DType::f32);  // exactly 1 MiB: within
  try {
    b.input("large", {1000000, 1000000}, DType::f32);
    FAIL() << "no error";
  } catch (const MemoryLimitError& e) {
    EXPECT_STREQ(e.what(),
                 "a [1000000 1000000] f32 tensor needs 4000000000000 bytes (3.6 TiB), over the memory limit of "
                 "1048576 bytes (1.0 MiB)");
  }
  EXPECT_EQ(g.nodes.size(), 1u);
}

TEST(MemoryLimit, CheckFormatsOnlyWhenRefusing) {
  WithLimit limit(100);
  bool formatted = false;
  check_memory(100, [&] {
    formatted = true;
    return std::string("within");
  });
  EXPECT_FALSE(formatted);
  EXPECT_THROW(check_memory(101, [] { return std::string("`str`: the string it builds"); }), MemoryLimitError);
}

}  // namespace
}  // namespace sx::graph
