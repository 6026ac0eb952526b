// The server and the remote client use core's SHA-256 (axqc/sha256.h) under their old names.
#pragma once

#include "axqc/sha256.h"

namespace axqc::service {

using ::axqc::IsSha256Hex;
using ::axqc::Sha256;
using ::axqc::Sha256Hex;

}  // namespace axqc::service
