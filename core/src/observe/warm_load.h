// `commbench __warm-load [--gpus]`: the load the thermal warm-up runs (a subprocess of the agent,
// which never touches a device itself): every CPU spins on arithmetic and, with --gpus, every
// visible GPU copies a buffer device-to-device in a loop. Runs until SIGTERM.
#pragma once

namespace commbench {

int warm_load_main(int argc, char** argv);

}  // namespace commbench
