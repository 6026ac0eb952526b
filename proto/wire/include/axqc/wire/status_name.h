// Names of gRPC status codes ("OK", "NOT_FOUND"), as used in the server's logs and the
// requests_total metric and in the client's error messages. The codes are numbers of the wire
// protocol (0 OK ... 16 UNAUTHENTICATED): this header needs no gRPC header, and grpc::StatusCode
// (an enum of those numbers) is taken as it is.
#pragma once

#include <type_traits>

namespace axqc::wire {

// "UNKNOWN" for numbers outside the gRPC set.
const char* StatusCodeName(int code);

template <typename Code>
requires std::is_enum_v<Code>
const char* StatusCodeName(Code code) { return StatusCodeName(static_cast<int>(code)); }

}  // namespace axqc::wire
