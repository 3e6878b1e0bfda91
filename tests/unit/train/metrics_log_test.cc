// metrics.jsonl: one JSON object a line, on disk as soon as appended; resuming drops
// what a killed run logged after its checkpoint; reading gives the loss curve's series.
#include "train/metrics_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/checkpoint.h"
#include "io/test_util.h"

namespace sx::train {
namespace {

using io::testing::read_file;
using io::testing::TempDir;
using io::testing::write_file;

TEST(MetricsLog, WritesOneObjectALineStepFirst) {
  TempDir dir;
  std::string path = dir.file("metrics.jsonl");
  {
    MetricsLog log(path);
    log.append(1, {{"loss", 2.5}, {"lr", 0.0003}});
    // On disk before the log is closed.
    EXPECT_EQ(read_file(path), "{\"step\":1,\"loss\":2.5,\"lr\":0.0003}\n");
    log.append(2, {{"loss", std::numeric_limits<double>::quiet_NaN()}, {"tokens/s", 1e6}});
  }
  EXPECT_EQ(read_file(path),
            "{\"step\":1,\"loss\":2.5,\"lr\":0.0003}\n"
            "{\"step\":2,\"loss\":null,\"tokens/s\":1000000}\n");
  {
    MetricsLog again(path);  // appends
    again.append(3, {{"a \"quoted\" name", 1}});
  }
  EXPECT_TRUE(read_file(path).ends_with("{\"step\":3,\"a \\\"quoted\\\" name\":1}\n"));
  MetricsLog log(path);
  EXPECT_THROW(log.append(4, {{"step", 1}}), std::invalid_argument);
  EXPECT_THROW(log.append(4, {{"x", 1}, {"x", 2}}), std::invalid_argument);
}

TEST(MetricsLog, ResumingDropsLaterStepsAndACutLine) {
  TempDir dir;
  std::string path = dir.file("metrics.jsonl");
  write_file(path, "{\"step\":1,\"loss\":3}\n{\"step\":2,\"loss\":2}\n{\"step\":3,\"loss\":1.5}\n{\"step\":4,\"lo");
  {
    MetricsLog log(path, 2);
    log.append(3, {{"loss", 1.25}});
  }
  EXPECT_EQ(read_file(path), "{\"step\":1,\"loss\":3}\n{\"step\":2,\"loss\":2}\n{\"step\":3,\"loss\":1.25}\n");
  // Resuming where nothing needs dropping, and where there is no file yet.
  { MetricsLog log(path, 10); }
  EXPECT_EQ(read_file(path), "{\"step\":1,\"loss\":3}\n{\"step\":2,\"loss\":2}\n{\"step\":3,\"loss\":1.25}\n");
  MetricsLog fresh(dir.file("new.jsonl"), 0);
  EXPECT_EQ(read_file(dir.file("new.jsonl")), "");
}

TEST(MetricsLog, ReadsBackTheSeriesInFirstAppearanceOrder) {
  TempDir dir;
  std::string path = dir.file("metrics.jsonl");
  {
    MetricsLog log(path);
    log.append(1, {{"loss", 3}, {"lr", 0.1}});
    log.append(2, {{"loss", std::numeric_limits<double>::infinity()}});
    log.append(3, {{"loss", 1}, {"val.loss", 1.5}});
  }
  write_file(path, read_file(path) + "not json\n{\"no step\":1}\n");
  auto series = read_metrics(path);
  ASSERT_EQ(series.size(), 3u);
  EXPECT_EQ(series[0].name, "loss");
  EXPECT_EQ(series[1].name, "lr");
  EXPECT_EQ(series[2].name, "val.loss");
  ASSERT_EQ(series[0].points.size(), 3u);
  EXPECT_EQ(series[0].points[0], (std::pair<int64_t, double>{1, 3}));
  EXPECT_TRUE(std::isnan(series[0].points[1].second));
  EXPECT_EQ(series[2].points, (std::vector<std::pair<int64_t, double>>{{3, 1.5}}));
  EXPECT_TRUE(read_metrics(dir.file("none.jsonl")).empty());
}

TEST(MetricsLog, AnUnwritablePathIsACodedError) {
  TempDir dir;
  try {
    MetricsLog log(dir.file("missing/metrics.jsonl"));
    FAIL() << "no error";
  } catch (const io::CheckpointError& e) {
    EXPECT_EQ(e.code(), "E-CKPT-001");
    EXPECT_NE(std::string(e.what()).find("missing/metrics.jsonl"), std::string::npos);
  }
}

}  // namespace
}  // namespace sx::train
