/* A stand-in for a profiler's NVTX injection library (what nsys loads through
 * NVTX_INJECTION64_PATH): it takes over nvtxRangePushA/nvtxRangePop and appends
 * "<pid> push <name>" / "<pid> pop" lines to the file named by NVTX_PROBE_OUT. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static FILE* out;

static int probe_push(const char* message) {
  if (out) {
    fprintf(out, "%d push %s\n", (int)getpid(), message);
    fflush(out);
  }
  return 0;
}

static int probe_pop(void) {
  if (out) {
    fprintf(out, "%d pop\n", (int)getpid());
    fflush(out);
  }
  return 0;
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const NvtxExportTableCallbacks* cb = (const NvtxExportTableCallbacks*)get_export_table(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable table = NULL;
  unsigned int size = 0;
  if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || size <= NVTX_CBID_CORE_RangePop)
    return 0;
  const char* path = getenv("NVTX_PROBE_OUT");
  out = path ? fopen(path, "a") : NULL;
  *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)probe_push;
  *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)probe_pop;
  return 1;
}
