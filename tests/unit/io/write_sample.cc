// io_write_sample PATH: writes the sample file python_reads.py checks with the Python
// safetensors package. Tensor k of dtype d holds value(i) = (i * 3 + k) % 11 - 5 (absolute for
// unsigned dtypes, i % 2 for bool), shape [2, 3]; plus a scalar, an empty tensor, metadata.
#include <cstdio>
#include <exception>

#include "io/safetensors.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: io_write_sample PATH\n");
    return 2;
  }
  using sx::graph::DType;
  using sx::graph::Tensor;
  std::vector<std::pair<std::string, Tensor>> tensors;
  int k = 0;
  for (DType dtype : sx::graph::kAllDTypes) {
    std::vector<double> values;
    for (int i = 0; i < 6; ++i) {
      double v = (i * 3 + k) % 11 - 5;
      if (dtype == DType::boolean) v = i % 2;
      if (sx::graph::is_unsigned(dtype) && v < 0) v = -v;
      values.push_back(v * (sx::graph::is_float(dtype) ? 0.75 : 1));
    }
    tensors.emplace_back(std::string(sx::graph::dtype_name(dtype)), Tensor::from_doubles(dtype, {2, 3}, values));
    ++k;
  }
  tensors.emplace_back("scalar", Tensor::scalar(DType::f32, 2.5));
  tensors.emplace_back("empty", Tensor(DType::f32, {0, 4}));
  try {
    sx::io::write_safetensors(argv[1], tensors, {{"format", "pt"}, {"written_by", "sexpgpu"}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "io_write_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
