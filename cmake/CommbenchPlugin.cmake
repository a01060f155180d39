# commbench_add_plugin(<name> SOURCES ... [LIBRARIES ...])
# Builds libcommbench_backend_<name>.so next to the other plugins (build and install tree).
# A plugin sees only the public ABI header (and the header-only SDK), never core internals.
function(commbench_add_plugin name)
  cmake_parse_arguments(P "" "OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  set(target commbench_backend_${name})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE commbench::abi ${P_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(P_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${P_OUTPUT_DIR}")
  else()
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${COMMBENCH_PLUGIN_OUTPUT_DIR}")
    install(TARGETS ${target} LIBRARY DESTINATION "${COMMBENCH_PLUGIN_SUBDIR}")
  endif()
endfunction()
