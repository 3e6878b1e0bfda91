// docs/models.md, "Pretrained and frozen parameters" and "with-loaded": :load and
// with-loaded read safetensors files written here with io::write_safetensors.
#include "model/load.h"

#include <sys/stat.h>

#include "io/safetensors.h"
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

graph::Tensor arange(graph::Shape shape, double scale = 1.0, graph::DType dtype = graph::DType::f32) {
  std::vector<double> values(static_cast<size_t>(graph::numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) * scale;
  return graph::Tensor::from_doubles(dtype, std::move(shape), values);
}

class Loading : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sexpgpu-load-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    // A Hugging Face layout: [out in] weights under their own names.
    io::write_safetensors((dir_ / "weights.safetensors").string(),
                          {{"model.layers.0.self_attn.q_proj.weight", arange({3, 4}, 0.1)},
                           {"emb", arange({8, 4})},
                           {"lm.w", arange({4, 8}, 0.5)},
                           {"half", arange({4, 8}, 0.25, graph::DType::bf16)},
                           {"ids", arange({4, 8}, 1.0, graph::DType::i64)}});
    io::write_safetensors((dir_ / "other.safetensors").string(), {{"emb", arange({8, 4}, -1.0)}});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `text` as run.sx beside the weights and evaluates it.
  void load(RunFile& run, const std::string& text) {
    std::ofstream(dir_ / "run.sx") << text;
    run.load_file((dir_ / "run.sx").string());
  }
  std::string error(const std::string& text) {
    RunFile run;
    try {
      load(run, text);
      check_loads(run.table);
      run.values();
    } catch (const lang::Error& e) {
      return e.diagnostic().code + ": " + e.diagnostic().message;
    }
    return "";
  }

  std::filesystem::path dir_;
};

constexpr const char* kBigram = R"(
(defmodel bigram (vocab dim)
  (defparam emb (zeros [vocab dim]))
  (defparam w (zeros [dim vocab]))
  (lambda (ids) (matmul (index emb ids) w)))
(defun hf-name (path) (if (equal path "teacher.emb") "emb" "lm.w"))
)";

TEST_F(Loading, FrozenAttentionReadsATransposedTensorByPrefix) {
  RunFile run;
  load(run, R"(
(defmodel frozen-attention (width weights prefix)
  (defparam q (zeros [3 width])
    :trainable false
    :load [weights (str prefix "q_proj.weight")])
  (lambda (x) (matmul x (transpose q [1 0]))))
(defvar model (frozen-attention 4 "weights.safetensors" "model.layers.0.self_attn."))
)");
  const auto& q = run.param("model.q");
  EXPECT_FALSE(q.decl->trainable);
  EXPECT_EQ(q.decl->load->second, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(run.value("model.q"), arange({3, 4}, 0.1).to_doubles());
  // x = ones: each output is the sum of a row of q.
  auto out = run.run("(model (ones [1 4]))").to_doubles();
  EXPECT_NEAR(out[0], 0.6, 1e-6);
  EXPECT_NEAR(out[2], 3.8, 1e-5);
}

TEST_F(Loading, LoadAlonefineTunesAndTrainableFalseAloneIsAFixedFeature) {
  RunFile run;
  load(run, R"(
(defmodel m ()
  (defparam tuned (zeros [8 4]) :load ["weights.safetensors" "emb"])
  (defparam fixed (normal [2 2]) :trainable false)
  (lambda (x) x))
(defvar model (m))
)");
  EXPECT_TRUE(run.param("model.tuned").decl->trainable);
  EXPECT_EQ(run.value("model.tuned"), arange({8, 4}).to_doubles());
  EXPECT_FALSE(run.param("model.fixed").decl->trainable);
  EXPECT_FALSE(run.param("model.fixed").decl->load);
}

TEST_F(Loading, WithLoadedNamesEachParameterByItsFinalPathAndFreezesIt) {
  RunFile run;
  load(run, std::string(kBigram) + R"(
(defvar teacher (with-loaded ("weights.safetensors" hf-name) (bigram 8 4)))
(defvar model (bigram 8 4))
)");
  EXPECT_EQ(run.paths(), (std::vector<std::string>{"model.emb", "model.w", "teacher.emb", "teacher.w"}));
  EXPECT_EQ(run.param("teacher.emb").decl->load->second, "emb");
  EXPECT_EQ(run.param("teacher.w").decl->load->second, "lm.w");
  EXPECT_FALSE(run.param("teacher.w").decl->trainable);
  EXPECT_TRUE(run.param("model.w").decl->trainable);
  EXPECT_FALSE(run.param("model.w").decl->load);
  EXPECT_EQ(run.value("teacher.w"), arange({4, 8}, 0.5).to_doubles());
}

TEST_F(Loading, TheNameFunctionSeesTopLevelNamesAsTheyAreAfterTheFile) {
  RunFile run;
  load(run, std::string(kBigram) + R"(
(defvar suffix "wrong")
(defun late-name (path) (if (equal path "teacher.emb") "emb" suffix))
(defvar teacher (with-loaded ("weights.safetensors" late-name) (bigram 8 4)))
(defvar suffix "lm.w")
)");
  EXPECT_EQ(run.param("teacher.w").decl->load->second, "lm.w");
}

TEST_F(Loading, TrainableTrueFineTunesAndOwnOptionsWinEachOnItsOwn) {
  RunFile run;
  load(run, R"(
(defmodel m ()
  (defparam emb (zeros [8 4]))
  (defparam own (zeros [8 4]) :load ["other.safetensors" "emb"])
  (defparam thawed (zeros [8 4]) :trainable true)
  (lambda (x) x))
(defun name (path) "emb")
(defvar tuned (with-loaded ("weights.safetensors" name :trainable true) (m)))
(defvar model (with-loaded ("weights.safetensors" name) (m)))
)");
  EXPECT_TRUE(run.param("tuned.emb").decl->trainable);
  // Its own :load reads its own file and still freezes.
  EXPECT_FALSE(run.param("model.own").decl->trainable);
  EXPECT_EQ(run.value("model.own"), arange({8, 4}, -1.0).to_doubles());
  // Its own :trainable true still loads from the with-loaded file.
  EXPECT_TRUE(run.param("model.thawed").decl->trainable);
  EXPECT_EQ(run.value("model.thawed"), arange({8, 4}).to_doubles());
}

TEST_F(Loading, FormsNestAndTheInnermostWins) {
  RunFile run;
  load(run, R"(
(defmodel leaf () (defparam emb (zeros [8 4])) (lambda (x) x))
(defun name (path) "emb")
(defmodel outer ()
  (defparam emb (zeros [8 4]))
  (let ((inner (with-loaded ("other.safetensors" name) (leaf))))
    (lambda (x) x)))
(defvar model (with-loaded ("weights.safetensors" name) (outer)))
)");
  EXPECT_EQ(run.value("model.emb"), arange({8, 4}).to_doubles());
  EXPECT_EQ(run.value("model.inner.emb"), arange({8, 4}, -1.0).to_doubles());
}

TEST_F(Loading, OnlyDefparamsExecutedDuringTheBodyAreAffected) {
  RunFile run;
  load(run, R"(
(defmodel leaf () (defparam emb (zeros [8 4])) (lambda (x) x))
(defun name (path) "emb")
(defvar make (with-loaded ("weights.safetensors" name) (lambda () (leaf))))
(defvar model (make))
)");
  EXPECT_FALSE(run.param("model.emb").decl->load);
  EXPECT_TRUE(run.param("model.emb").decl->trainable);
}

TEST_F(Loading, ABf16TensorLoadsIntoAnF32ParameterAndTheReverse) {
  RunFile run;
  load(run, R"(
(defmodel m ()
  (defparam from-bf16 (zeros [4 8]) :load ["weights.safetensors" "half"])
  (defparam to-bf16 (zeros [4 8] :dtype :bf16) :load ["weights.safetensors" "lm.w"])
  (lambda (x) x))
(defvar model (m))
)");
  EXPECT_EQ(run.value("model.from-bf16"), arange({4, 8}, 0.25).to_doubles());
  auto values = run.values();
  EXPECT_EQ(values["model.to-bf16"].dtype(), graph::DType::bf16);
  EXPECT_EQ(values["model.to-bf16"].to_doubles(), arange({4, 8}, 0.5, graph::DType::bf16).to_doubles());
}

TEST_F(Loading, TheHeadersAloneFindEveryMistake) {
  EXPECT_EQ(error(R"(
(defmodel m () (defparam w (zeros [2 2]) :load ["weights.safetensors" "nope"]) (lambda (x) x))
(defvar model (m)))")
                .substr(0, 10),
            "E-LOAD-011");
  EXPECT_EQ(error(R"(
(defmodel m () (defparam w (zeros [4 3]) :load ["weights.safetensors" "model.layers.0.self_attn.q_proj.weight"]) (lambda (x) x))
(defvar model (m)))")
                .substr(0, 10),
            "E-LOAD-012");
  EXPECT_EQ(error(R"(
(defmodel m () (defparam w (zeros [4 8]) :load ["weights.safetensors" "ids"]) (lambda (x) x))
(defvar model (m)))")
                .substr(0, 10),
            "E-LOAD-008");
  EXPECT_EQ(error(R"(
(defmodel m () (defparam w (zeros [4 8]) :load ["missing.safetensors" "w"]) (lambda (x) x))
(defvar model (m)))")
                .substr(0, 10),
            "E-LOAD-002");
}

TEST_F(Loading, NameFunctionErrorsSayWhichPathTheyWereFor) {
  EXPECT_EQ(error(std::string(kBigram) + R"(
(defvar teacher (with-loaded ("weights.safetensors" (lambda (path) 5)) (bigram 8 4))))"),
            "E-PARAM-007: the name function of `with-loaded` gave `5` for `teacher.emb`, not a string");
  RunFile run;
  try {
    load(run, std::string(kBigram) + R"(
(defvar teacher (with-loaded ("weights.safetensors" (lambda (path) (error "no name for" path))) (bigram 8 4))))");
    FAIL() << "no error";
  } catch (const lang::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "E-EVAL-010");
    ASSERT_FALSE(e.diagnostic().notes.empty());
    EXPECT_NE(e.diagnostic().notes.back().find("teacher.emb"), std::string::npos);
  }
}

TEST_F(Loading, ABadHeaderIsEParam007) {
  for (const char* header : {"(with-loaded (\"weights.safetensors\") (list))", "(with-loaded (5 identity) (list))",
                             "(with-loaded (\"weights.safetensors\" 5) (list))",
                             "(with-loaded (\"weights.safetensors\" identity :trainable 1) (list))",
                             "(with-loaded (\"weights.safetensors\" identity :frozen true) (list))"}) {
    EXPECT_EQ(error(header).substr(0, 11), "E-PARAM-007") << header;
  }
}

TEST_F(Loading, AFrozenParameterEveryUseOfWhichCastsDownIsStoredAsBf16) {
  RunFile run;
  load(run, R"(
(defmodel m ()
  (defparam down (ones [4 2]) :trainable false)
  (defparam kept (ones [4 2]) :trainable false)
  (defparam trained (ones [4 2]))
  (lambda (x) (list (matmul (cast x :bf16) (cast down :bf16)) (matmul x kept) (cast trained :bf16))))
(defvar model (m))
(defvar out (model (ones [1 4])))
)");
  auto stored = store_frozen_parameters(run.table, run.interp.tracer()->graph());
  EXPECT_EQ(stored["model.down"], graph::DType::bf16);
  EXPECT_EQ(stored["model.kept"], graph::DType::f32);
  EXPECT_EQ(stored["model.trained"], graph::DType::f32);
  auto values = initial_values(run.table, 0, *run.device, stored);
  EXPECT_EQ(values["model.down"].dtype(), graph::DType::bf16);
}

TEST_F(Loading, AFileLocationIsItsAbsolutePath) {
  const std::string abs = (dir_ / "weights.safetensors").string();
  // %2E is `.`: a file:// location's escapes are decoded.
  std::string dotted = abs.substr(0, abs.size() - std::string(".safetensors").size()) + "%2Esafetensors";
  for (const std::string& location : {"file://" + abs, "file://localhost" + abs, "FILE://" + dotted}) {
    SCOPED_TRACE(location);
    RunFile run;
    load(run, "(defmodel m () (defparam e (zeros [8 4]) :load [\"" + location + "\" \"emb\"]) (lambda (x) x))\n" +
                  "(defvar model (m))\n");
    EXPECT_EQ(run.param("model.e").decl->load->first, abs);
    EXPECT_EQ(run.value("model.e"), arange({8, 4}).to_doubles());
  }
}

TEST_F(Loading, OtherSchemesAreRefusedByNameAsWritten) {
  auto load_from = [&](const std::string& location) {
    return error("(defmodel m () (defparam e (zeros [8 4]) :load [\"" + location + "\" \"emb\"]) (lambda (x) x))\n" +
                 "(defvar model (m))\n");
  };
  EXPECT_EQ(load_from("https://host/w.safetensors"),
            "E-LOAD-013: `model.e` loads from https://host/w.safetensors, and SexpGPU does not read https:// "
            "locations");
  EXPECT_EQ(load_from("hf://org/name/model.safetensors.index.json").substr(0, 10), "E-LOAD-013");
  // Storage locations are read: malformed ones are refused as written.
  EXPECT_EQ(load_from("s3://Bucket/w.safetensors").substr(0, 40), "E-LOC-001: s3://Bucket/w.safetensors: `B");
  EXPECT_EQ(load_from("o41://team").substr(0, 22), "E-LOC-001: o41://team:");
  // file:// names an absolute path on this host: `w.safetensors` here would be a host.
  EXPECT_EQ(load_from("file://w.safetensors"),
            "E-LOAD-013: file://w.safetensors: a file:// location names an absolute path on this host, as in "
            "file:///home/me/w.safetensors (three slashes)");
  // Without `://` there is no scheme: a relative path (beside run.sx) that happens to hold a colon.
  EXPECT_EQ(load_from("file:weights.safetensors"),
            "E-LOAD-002: " + (dir_ / "file:weights.safetensors").string() + ": the file does not exist");
}

// A Hugging Face cache: every file of a snapshot is a link to ../../blobs/SHA, shards and
// index alike. The links point out of the snapshot's folder, and are followed.
TEST_F(Loading, AHuggingFaceCacheSnapshotLoadsThroughItsLinks) {
  namespace fs = std::filesystem;
  const fs::path repo = dir_ / "hub" / "models--org--bigram";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / "0123abc");
  io::write_safetensors((repo / "blobs" / "a1b2c3").string(), {{"emb", arange({8, 4})}});
  io::write_safetensors((repo / "blobs" / "d4e5f6").string(), {{"lm.w", arange({4, 8}, 0.5)}});
  std::ofstream(repo / "blobs" / "0a0b0c") << R"({"metadata": {"total_size": 256}, "weight_map": {
    "emb": "model-00001-of-00002.safetensors", "lm.w": "model-00002-of-00002.safetensors"}})";
  const fs::path snapshot = repo / "snapshots" / "0123abc";
  fs::create_symlink("../../blobs/a1b2c3", snapshot / "model-00001-of-00002.safetensors");
  fs::create_symlink("../../blobs/d4e5f6", snapshot / "model-00002-of-00002.safetensors");
  fs::create_symlink("../../blobs/0a0b0c", snapshot / "model.safetensors.index.json");
  RunFile run;
  load(run, std::string(kBigram) + R"(
(defvar teacher
  (with-loaded ("hub/models--org--bigram/snapshots/0123abc/model.safetensors.index.json" hf-name) (bigram 8 4)))
)");
  EXPECT_EQ(run.value("teacher.emb"), arange({8, 4}).to_doubles());
  EXPECT_EQ(run.value("teacher.w"), arange({4, 8}, 0.5).to_doubles());
  auto identities = load_identities(run.table);
  EXPECT_EQ(identities.size(), 3u);  // the index and both shards, by the names the snapshot gives them
  EXPECT_TRUE(identities.count((snapshot / "model-00002-of-00002.safetensors").string()));
}

// A shard an index names is opened when a tensor is looked up in it: whatever is wrong
// with it is the parameter's coded error, as for a single file (issue 12 item 2).
TEST_F(Loading, AMalformedShardIsTheParametersCodedError) {
  namespace fs = std::filesystem;
  std::ofstream(dir_ / "garbage.safetensors") << "garbage";
  std::ofstream(dir_ / "nested.safetensors") << R"({"weight_map": {"emb": "garbage.safetensors"}})";
  fs::create_symlink(dir_ / "run.sx", dir_ / "linked.safetensors");
  for (const std::string shard : {"garbage.safetensors", "nested.safetensors", "linked.safetensors"}) {
    SCOPED_TRACE(shard);
    std::ofstream(dir_ / "index.json") << R"({"weight_map": {"emb": ")" + shard + R"("}})";
    std::string text =
        "(defmodel m () (defparam e (zeros [8 4]) :load [\"index.json\" \"emb\"]) (lambda (x) x))\n"
        "(defvar model (m))\n";
    std::string message = error(text);
    EXPECT_EQ(message.substr(0, 7), "E-LOAD-") << message;
    EXPECT_NE(message.find(shard), std::string::npos) << message;
  }
}

// Opening a FIFO for reading waits for a writer: a :load of one is refused at once.
TEST_F(Loading, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(::mkfifo((dir_ / "fifo.safetensors").c_str(), 0600), 0);
  std::string message = error(
      "(defmodel m () (defparam e (zeros [8 4]) :load [\"fifo.safetensors\" \"emb\"]) (lambda (x) x))\n"
      "(defvar model (m))\n");
  EXPECT_EQ(message, "E-LOAD-002: " + (dir_ / "fifo.safetensors").string() + ": not a regular file");
}

TEST_F(Loading, EveryFileReadIsIdentifiedBySizeAndHash) {
  RunFile run;
  load(run, std::string(kBigram) + R"(
(defvar teacher (with-loaded ("weights.safetensors" hf-name) (bigram 8 4))))");
  auto identities = load_identities(run.table);
  ASSERT_EQ(identities.size(), 1u);
  const auto& [file, identity] = *identities.begin();
  EXPECT_EQ(identity.size, std::filesystem::file_size(file));
  EXPECT_EQ(identity.sha256.size(), 64u);
}

}  // namespace
}  // namespace sx::model::testing
