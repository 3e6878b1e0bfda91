// The exceptions the graph library throws. Every message begins with what
// failed (an op's name, "verify", "graph JSON", ...) so a caller can show it
// to the user as it is.
#pragma once

#include <stdexcept>
#include <string>

namespace sx::graph {

// Base of every error the graph library throws.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An op was given arguments whose shapes, dtypes or attributes it cannot take.
class ShapeError : public GraphError {
 public:
  using GraphError::GraphError;
};

// The verifier rejected a graph; the message names the node.
class VerifyError : public GraphError {
 public:
  using GraphError::GraphError;
};

// A serialized graph could not be read; the message says how to fix it.
class FormatError : public GraphError {
 public:
  using GraphError::GraphError;
};

}  // namespace sx::graph
