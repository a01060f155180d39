# commbench_add_plugin(<name> SOURCES src... [LIBRARIES lib...] [OUTPUT_DIR dir])
#
# Builds the backend plugin libcommbench_backend_<name>.so (a MODULE library: loaded with
# dlopen, never linked against) from SOURCES, linked to LIBRARIES and to commbench::sdk (C++
# sources: the ABI header, the header-only SDK and the C++20 it needs) or commbench::abi (a C-only
# project: backend.h, C99). Symbols are hidden except the entry point (CB_EXPORT), so two plugins
# in one process never resolve each other's. The target is named commbench_backend_<name>.
# Linked with -z defs: a symbol no library provides fails the plugin's build, not the user's run
# (dlopen would only say "undefined symbol" then). COMMBENCH_PLUGIN_ALLOW_UNDEFINED=ON turns
# that off (e.g. for a sanitizer runtime that the executable provides).
#
# Where the file goes:
#   - by default, COMMBENCH_PLUGIN_OUTPUT_DIR: in a plugin's own project (find_package(commbench))
#     that is the project's build directory; inside commbench's tree, its plugin folder. It is
#     installed to <CMAKE_INSTALL_PREFIX>/COMMBENCH_PLUGIN_SUBDIR (lib/commbench/plugins), where a
#     commbench installed in the same prefix finds it.
#   - OUTPUT_DIR dir: built into `dir` and NOT installed (commbench's own test plugins use it to
#     stay off the default search path; point --plugin-path or COMMBENCH_PLUGIN_PATH at `dir`).
# docs/plugin-guide.md §11 walks through a plugin project; examples/store_backend is one.
function(commbench_add_plugin name)
  cmake_parse_arguments(P "" "OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  set(target commbench_backend_${name})
  add_library(${target} MODULE ${P_SOURCES})
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("CXX" IN_LIST languages)
    target_link_libraries(${target} PRIVATE commbench::sdk ${P_LIBRARIES})
  else()
    target_link_libraries(${target} PRIVATE commbench::abi ${P_LIBRARIES})
  endif()
  if(NOT COMMBENCH_PLUGIN_ALLOW_UNDEFINED AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options(${target} PRIVATE "LINKER:-z,defs")
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(P_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${P_OUTPUT_DIR}")
  else()
    # Installed in <prefix>/lib/commbench/plugins: the libraries it needs are looked for in
    # <prefix>/lib first (where the relocatable release bundles them, scripts/package.sh).
    # Built with that RUNPATH too (plus the folders outside the system's it was linked from):
    # an install-time edit would need a build RUNPATH padded with empty entries, which the
    # loader reads as the current folder (cmake/CommbenchRpath.cmake; this file is installed
    # for vendors on its own, so it says it here).
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${COMMBENCH_PLUGIN_OUTPUT_DIR}"
      INSTALL_RPATH "$ORIGIN/../.." BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH_USE_LINK_PATH ON)
    install(TARGETS ${target} LIBRARY DESTINATION "${COMMBENCH_PLUGIN_SUBDIR}")
  endif()
endfunction()
