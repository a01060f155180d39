// What tells this host, and its clock, apart from others as seen from inside a process.
#pragma once

#include <string>

namespace commbench {

// gethostname(): what launchers and the bootstrap group ranks by.
std::string host_name();

// The kernel's boot id (/proc/sys/kernel/random/boot_id), shared by the processes of one running
// kernel whatever namespaces they are in, different on every other machine (and after a
// reboot); empty where the file cannot be read.
std::string kernel_boot_id();

// Processes that return the same string read the same CLOCK_MONOTONIC: one kernel (boot id)
// and one time namespace offset (/proc/self/timens_offsets; absent: no time namespaces, offset
// 0). A host name alone is not enough: cloned machines share names, and the multi-host tests
// shift namespaces' clocks by seconds.
std::string monotonic_clock_identity();

}  // namespace commbench
