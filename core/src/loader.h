// Stage 1: load a model from a file or a memory buffer.
#pragma once

#include <google/protobuf/arena.h>
#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <string_view>

#include "axqc/errors.h"  // thrown: InputError
#include "axqc/external_data.h"
#include "axqc/timing.h"
#include "onnx_util.h"

namespace axqc::detail {

struct LoadedModel {
  // The parsed model lives on an arena: its messages are laid out in parse order (the later
  // passes walk them with fewer cache misses) and are freed in one go.
  std::unique_ptr<google::protobuf::Arena> arena = std::make_unique<google::protobuf::Arena>();
  onnx::ModelProto* proto = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena.get());
  std::string name;        // path or caller-supplied name
  std::string dir;         // model directory (path loads); empty for in-memory loads
  std::string sha256;      // hex of the file bytes
  std::uint64_t size = 0;  // file bytes
  std::unique_ptr<ExternalDataReader> external;  // null for in-memory loads without data files
  // The external data comes from files handed over with the bytes (CheckOptions::external_data),
  // not from a directory: the ONNX checker must not look for the files on disk.
  bool external_in_memory = false;
};

// Throws axqc::InputError with the file name and the cause. `timings` (optional) receives the
// read, sha256 and parse times. `parallel`: the bytes are hashed on a second thread while they are
// parsed (its read and sha256 times are taken on that thread's clock). `known_sha256`, when not
// empty, is taken as the hash of `bytes` (CheckOptions::known_sha256) and nothing is hashed.
// `external`: the data files of an in-memory model (CheckOptions::external_data), validated here.
LoadedModel LoadFromFile(const std::string& path, StageTimings* timings = nullptr,
                         bool parallel = false);
LoadedModel LoadFromBytes(std::string_view bytes, const std::string& name,
                          StageTimings* timings = nullptr, bool parallel = false,
                          const std::string& known_sha256 = {},
                          const ExternalData* external = nullptr);

}  // namespace axqc::detail
