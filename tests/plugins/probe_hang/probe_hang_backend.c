/* Test plugin "probe_hang": loading it never finishes, as with a plugin whose library waits on
 * something at load time (a driver for a device that does not answer, a license server). Its
 * constructor blocks before the loader can read anything, so every probe of it hangs until the
 * caller's timeout kills the probe process. Built into its own directory (test-plugins-probe-hang)
 * so it is on a plugin path only where a test puts it there. */
#include <unistd.h>

__attribute__((constructor)) static void block_forever_on_load(void) {
  for (;;) pause(); /* ends only by a signal: the probe's SIGKILL */
}
