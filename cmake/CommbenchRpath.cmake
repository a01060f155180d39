# The RUNPATH of a target that is installed: `rpath`, then the folders outside the system's and
# this project's that its libraries were linked from (CUDA's), the same in the build tree and
# installed.
#
# Left to itself, CMake builds such a target with a RUNPATH ending in an empty entry (':', with
# more of them as padding) to make room for editing it at install time, and the dynamic loader
# reads an empty entry as the current folder: a libfmt.so.9 planted wherever build/bin/commbench
# is started from would be loaded. Built with its install RUNPATH, nothing is edited or padded.
# tests/integration/check_runpaths.sh checks every ELF file of the build tree.
function(commbench_set_rpath target rpath)
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "${rpath}" BUILD_WITH_INSTALL_RPATH ON
                                             INSTALL_RPATH_USE_LINK_PATH ON)
endfunction()
