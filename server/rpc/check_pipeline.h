// The check of a model whose bytes a Check or Upload has in hand: report cache (memory, store),
// claim in the store (single flight across servers sharing it; wait for the claiming server's
// report), check engine (bounded queue, in-process single flight), answer.
#pragma once

#include <memory>

#include "model_source.h"
#include "rpc/call.h"
#include "rpc/context.h"

namespace axqc::server {

// On the I/O pool. Finishes `call` (now, or when the check or the other server's check ends).
void CheckModel(ServiceContext& s, const std::shared_ptr<CheckCall>& call, SourcedModel model);

}  // namespace axqc::server
