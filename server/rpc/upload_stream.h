// The Upload RPC's messages on the upload assembler (upload_assembler.h, which takes metadata and
// bytes): the order of the stream (metadata first, then model and data chunks), and the gRPC
// status of a refusal, chosen from its kind. The Upload reactor (rpc/upload.cc), the assembler's
// tests and the upload fuzz target feed messages through it.
#pragma once

#include <grpcpp/support/status.h>

#include "axqc/v1/axqc.pb.h"
#include "upload_assembler.h"

namespace axqc::server {

// One message of the stream. As the assembler's calls: OK, the upload goes on; a refusal ends it.
UploadStatus AddUploadMessage(UploadAssembler& assembler, const v1::UploadRequest& msg);
// The same, but may take the chunk's string instead of copying it (leaving an empty string,
// often one with capacity from an earlier chunk, in its place).
UploadStatus TakeUploadMessage(UploadAssembler& assembler, v1::UploadRequest* msg);

// The gRPC status of an assembler's outcome: kInvalid INVALID_ARGUMENT; kTooLarge, kBusy,
// kNoDataFiles and kStorage RESOURCE_EXHAUSTED; kInternal INTERNAL.
grpc::Status GrpcStatusOf(const UploadStatus& status);

}  // namespace axqc::server
