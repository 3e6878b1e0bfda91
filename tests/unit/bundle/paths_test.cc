// The path sites a bundle rewrites, and rewriting that keeps every other byte.
#include "bundle/paths.h"

#include <gtest/gtest.h>

namespace sx::bundle {
namespace {

std::vector<PathSite> sites_of(const lang::SourceRef& file) { return path_sites(*file); }

std::string text_at(const lang::SourceRef& file, const PathSite& site) {
  return file->text().substr(site.span.offset, site.span.length);
}

TEST(PathSites, FindsEachFormsPathLiteralOrExpression) {
  lang::SourceRef file = lang::SourceFile::make("run.sx", R"(; a comment "x.jsonl"
(defvar teacher (with-loaded ("t/model.safetensors.index.json" name) (m)))
(defmodel m () (defparam w (zeros [2]) :trainable false :load ["w.safetensors" "w"]) (lambda (x) x))
(defmodel n (f) (defparam v (zeros [2]) :load [f "v"]) (lambda (x) x))
(defrun :data (jsonl "d/train.jsonl" :fields [:x]) :eval (pass :data (records (str "a" "b"))))
)");
  std::vector<PathSite> sites = sites_of(file);
  ASSERT_EQ(sites.size(), 5u);
  EXPECT_EQ(sites[0].form, "with-loaded");
  EXPECT_EQ(sites[0].literal, "t/model.safetensors.index.json");
  EXPECT_EQ(text_at(file, sites[0]), "\"t/model.safetensors.index.json\"");
  EXPECT_EQ(sites[1].form, "defparam :load");
  EXPECT_EQ(sites[1].literal, "w.safetensors");
  EXPECT_EQ(sites[2].literal, std::nullopt);
  EXPECT_EQ(text_at(file, sites[2]), "f");
  EXPECT_EQ(sites[3].form, "jsonl");
  EXPECT_EQ(sites[3].literal, "d/train.jsonl");
  EXPECT_EQ(sites[4].form, "records");
  EXPECT_EQ(text_at(file, sites[4]), "(str \"a\" \"b\")");
  EXPECT_EQ(file->line_of(sites[4].span.offset), 5u);
}

TEST(PathSites, SkipsQuotedDataAndLetBindingNames) {
  lang::SourceRef file = lang::SourceFile::make("run.sx", R"('(jsonl x)
(let ((records (jsonl "a.jsonl" :fields [:x]))) records)
(defun f () (quote (text-windows y)))
)");
  std::vector<PathSite> sites = sites_of(file);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].literal, "a.jsonl");
}

TEST(PathSites, ModelFolderTokenizerFileAndTensorFiles) {
  lang::SourceRef file = lang::SourceFile::make("run.sx", R"((defvar body (hf-model "models/tiny" :trainable false))
(defvar tk (tokenizer "models/tiny/tokenizer.json"))
(defvar w (with-loaded ("w.safetensors" name) (m)))
)");
  std::vector<PathSite> sites = sites_of(file);
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(sites[0].form, "hf-model");
  EXPECT_EQ(sites[0].literal, "models/tiny");
  EXPECT_EQ(sites[0].kind, PathKind::ModelFolder);
  EXPECT_EQ(sites[1].form, "tokenizer");
  EXPECT_EQ(sites[1].literal, "models/tiny/tokenizer.json");
  EXPECT_EQ(sites[1].kind, PathKind::File);
  EXPECT_EQ(sites[2].kind, PathKind::Tensors);
}

TEST(PathSites, SkipsParameterListsNamedAsForms) {
  lang::SourceRef file = lang::SourceFile::make("run.sx", R"((defun encode (tokenizer text) (tokenizer text))
(defmodel m (records) (lambda (jsonl) jsonl))
(defmacro wrap (hf-model) hf-model)
)");
  std::vector<PathSite> sites = sites_of(file);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].form, "tokenizer");
  EXPECT_EQ(text_at(file, sites[0]), "text");
}

TEST(PathSites, ComputedHeaderAndMissingPath) {
  lang::SourceRef file = lang::SourceFile::make("run.sx", "(with-loaded header (m))\n(jsonl)\n");
  std::vector<PathSite> sites = sites_of(file);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(text_at(file, sites[0]), "header");
  EXPECT_FALSE(sites[1].literal);
  EXPECT_EQ(text_at(file, sites[1]), "(jsonl)");
}

TEST(ApplyEdits, ReplacesTheSpansAndKeepsEveryOtherByte) {
  std::string text = "(a \"x\")  ; keep \"x\"\n(b \"yy\" \t)\n";
  // Given out of order: each edit replaces its own span.
  std::vector<Edit> edits = {{23, 4, string_literal("q\"r")}, {3, 3, string_literal("data/1-x")}};
  EXPECT_EQ(apply_edits(text, edits), "(a \"data/1-x\")  ; keep \"x\"\n(b \"q\\\"r\" \t)\n");
  EXPECT_EQ(apply_edits(text, {}), text);
}

}  // namespace
}  // namespace sx::bundle
