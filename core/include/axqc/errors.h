// Errors of the public API.
#pragma once

#include <stdexcept>

namespace axqc {

// Not an ONNX model, unreadable file, unsafe external data: no verdict, an input error.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace axqc
