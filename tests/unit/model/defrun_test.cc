// defrun (docs/training.md): keyword settings, E-RUN-001 for an unknown key or a seed
// that is not a non-negative integer, E-RUN-002 for a second defrun.
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

TEST(Defrun, SettingsAreEvaluatedAndRecordedInOrder) {
  RunFile f;
  f.load("(defrun :steps 10 :batch 4 :seed (+ 1 2) :precision :bf16 :log-every 5)");
  EXPECT_TRUE(f.settings->defined);
  EXPECT_EQ(f.settings->seed(), 3u);
  ASSERT_EQ(f.settings->entries.size(), 5u);
  EXPECT_EQ(f.settings->entries[0].first, "steps");
  EXPECT_EQ(f.settings->entries[2].first, "seed");
  ASSERT_NE(f.settings->find("precision"), nullptr);
  EXPECT_EQ(lang::print(*f.settings->find("precision")), ":bf16");
  EXPECT_EQ(f.settings->find("optimizer"), nullptr);
}

TEST(Defrun, WithoutADefrunTheSeedIsZero) {
  RunFile f;
  f.load("(defvar x 1)");
  EXPECT_FALSE(f.settings->defined);
  EXPECT_EQ(f.settings->seed(), 0u);
}

TEST(Defrun, EveryDocumentedKeyIsAccepted) {
  EXPECT_EQ(error_code("(defrun :data nil :eval nil :batch 8 :steps 100 :seed 1 :optimizer nil :schedule nil "
                       ":ema 0.999 :precision :f32 :grad-clip 1.0 :checkpoint-every 10 :keep 3 :log-every 1)"),
            "");
}

// E-RUN-001: a key defrun does not know, pointing at the key.
TEST(Defrun, UnknownKeyIsERun001) {
  auto d = load_error("(defrun :steps 10 :sed 1)");
  EXPECT_EQ(d.code, "E-RUN-001");
  EXPECT_EQ(spanned(d), ":sed");
  EXPECT_NE(d.message.find(":sed"), std::string::npos) << d.message;
  EXPECT_EQ(error_code("(defrun seed 1)"), "E-RUN-001");
  EXPECT_EQ(error_code("(defrun \"seed\" 1)"), "E-RUN-001");
}

// E-RUN-001: `:seed` is a non-negative integer.
TEST(Defrun, SeedNotANonNegativeIntegerIsERun001) {
  auto d = load_error("(defrun :seed -1)");
  EXPECT_EQ(d.code, "E-RUN-001");
  EXPECT_EQ(spanned(d), "-1");
  EXPECT_EQ(error_code("(defrun :seed 1.5)"), "E-RUN-001");
  EXPECT_EQ(error_code("(defrun :seed \"7\")"), "E-RUN-001");
  EXPECT_EQ(error_code("(defrun :seed nil)"), "E-RUN-001");
}

// E-RUN-002: a run file has one defrun; the second is refused and the first named.
TEST(Defrun, ASecondDefrunIsERun002) {
  auto d = load_error("(defrun :seed 1)\n(defvar x 2)\n(defrun :seed 2)");
  EXPECT_EQ(d.code, "E-RUN-002");
  EXPECT_EQ(spanned(d), "(defrun :seed 2)");
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("run.sx:1"), std::string::npos) << d.notes[0];
}

}  // namespace
}  // namespace sx::model::testing
