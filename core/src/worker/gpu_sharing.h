// Several ranks of one host on one GPU. NCCL refuses it at init ("Duplicate GPU detected"), and a
// host backend on a shared GPU would measure contention: unless the run allows it
// (oversubscribe_gpu), the execution is reported unavailable with the ranks and the device named,
// before any backend is initialised. Catches what the local binding rule cannot see: a global
// CUDA_VISIBLE_DEVICES=0 handed to every rank, a `device` option, launchers that start one task
// per rank.
#pragma once

#include <string>

#include "bootstrap/collectives.h"
#include "device/gpu_device.h"

namespace commbench {

// Collective over the execution's ranks (every rank calls it; `gpu` is null where this rank has
// no usable CUDA). Returns "" when no two ranks of one host use the same physical device, or when
// `allowed`; else what is shared and what to do.
std::string gpu_sharing_problem(Bootstrap& bootstrap, const GpuDevice* gpu, bool allowed, Millis timeout);

}  // namespace commbench
