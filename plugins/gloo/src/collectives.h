// The collective ops, each run to completion inside post(): gloo's collectives block.
#pragma once

struct cb_comm;

namespace commbench::gloo_backend {

struct CheckedOp;

// Runs one collective (every op but send/recv) following the ABI's count and in-place
// conventions. Inputs that overlap their outputs in a way gloo cannot handle are first copied
// to a scratch buffer; that copy is part of the op (and of its measured time).
void run_collective(cb_comm& comm, const CheckedOp& op);

}  // namespace commbench::gloo_backend
