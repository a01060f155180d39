# Releases of one build (scripts/package.sh, docs/install.md):
#  - a relocatable tarball commbench-<version>-linux-<arch>.tar.gz: this install tree plus the
#    non-system shared libraries it needs in lib/, every binary finding them through an
#    $ORIGIN-relative RUNPATH, so it runs from wherever it is unpacked (HPC users without root, a
#    bare GPU machine with no -dev packages);
#  - a Debian package (cpack -G DEB) whose dependencies dpkg-shlibdeps derives from the same
#    binaries, so `apt install ./commbench_<version>_<arch>.deb` pulls in what a fresh Debian 12
#    needs. CUDA, NCCL and cuBLAS are not Debian packages: they come from the user's CUDA install
#    or a Python environment's wheels (the nccl plugin says so when it cannot load).

# What the GPU acceptance run needs from the install tree (component gpu_tests, with the test
# binary and bench/nccl_direct): the script as a command, the bench script it drives.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/gpu-acceptance.sh DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME commbench-gpu-acceptance COMPONENT gpu_tests)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/bench/run_nccl_bench.sh
        DESTINATION ${CMAKE_INSTALL_DATADIR}/commbench/bench COMPONENT gpu_tests)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/commbench/configs
        FILES_MATCHING PATTERN "*.toml")

set(CPACK_PACKAGE_NAME commbench)
set(CPACK_PACKAGE_VENDOR "commbench developers")
set(CPACK_PACKAGE_CONTACT "commbench developers <commbench@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Benchmarks for collective and point-to-point communication (NCCL, NCCLX, Gloo, UCX plugins)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # commbench_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The nccl plugin links libnccl and libcudart from the toolkit, which no Debian package provides:
# dpkg-shlibdeps must find them to read their sonames, and leaves them out of Depends.
set(_commbench_private_dirs)
foreach(lib IN ITEMS "${NCCL_LIBRARY}" "${CUDA_cudart_LIBRARY}")  # cache entries of plugins/nccl_common
  if(lib)
    get_filename_component(dir "${lib}" DIRECTORY)
    list(APPEND _commbench_private_dirs "${dir}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _commbench_private_dirs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${_commbench_private_dirs}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-matplotlib")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3")
# The test-only component (GPU test binary, nccl_direct, the acceptance script) goes in both.
set(CPACK_GENERATOR "DEB")
include(CPack)
