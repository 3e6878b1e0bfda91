// `sexpgpu export --format hf`: a checkpoint's weights as the Hugging Face folder they were
// loaded from (sexpgpu/hf's hf-model, or any :load / with-loaded of one folder's file):
//
//   model.safetensors   each weight under the tensor name it was loaded from (the
//                       checkpoint's experiment.json records it), as f32, with the
//                       {"format": "pt"} metadata transformers asks for
//   config.json         the config.json beside the file they were loaded from, as it is
//   tokenizer.json      the one the run read its text through (the :data loader's
//                       :tokenize), else the tokenizer.json beside the weights, if any
//
// so that transformers' from_pretrained loads the fine-tuned model. A weight that was not
// loaded from a file, weights loaded from two folders, or text read through two
// tokenizers are E-HF-003.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/tensor.h"
#include "train/run_record.h"

namespace sx::train {

// Writes the folder `out` (io/export_folder.h: new, whole or not at all) and returns its
// path. `run_tokenizers` are the resolved locations of the tokenizer.json files the run's
// loader read text through, one a tokenized field. Diagnosed errors are lang::Error.
std::string export_hf_folder(const std::string& out, const std::vector<std::pair<std::string, graph::Tensor>>& weights,
                             const RunRecord& record, const std::vector<std::string>& run_tokenizers);

}  // namespace sx::train
