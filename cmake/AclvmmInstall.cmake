# Install layout of a CANN-like root (docs/install.md; spec conventions.md §1.1):
#
#   <root>/set_env.sh                      sourced by users and CI (scripts/set_env.sh.in)
#   <root>/bin/setenv.bash                 the legacy env-script name, sources ../set_env.sh
#   <root>/bin/aclvmm-smi                  the device monitor (docs/smi.md)
#   <root>/include/acl/..., include/aclvmm/aclvmm.h
#   <root>/lib64/libascendcl.so            the library (SONAME libascendcl.so)
#   <root>/lib64/libacl_rt.so              symlink to it: one library, one runtime state
#   <root>/lib64/cmake/aclvmm/             find_package(aclvmm) -> aclvmm::ascendcl, aclvmm::acl_rt
#   <root>/share/cmake/aclvmm/             forwards there (CMAKE_PREFIX_PATH=<root> on Debian)
#   <root>/lib64/pkgconfig/                aclvmm.pc, ascendcl.pc, acl_rt.pc
#   <root>/<arch>-linux/{include,lib64}    symlinks to ../include and ../lib64: tools that look
#                                          in the arch-specific directory find the same files
#
# Every generated file finds the root relative to itself, so the tree can be moved after
# installation; only set_env.sh keeps the install prefix as a fallback for shells that cannot
# tell a sourced script its own path (dash, busybox sh).
include(CMakePackageConfigHelpers)

set(ACLVMM_LIBDIR lib64)
set(ACLVMM_CMAKEDIR ${ACLVMM_LIBDIR}/cmake/aclvmm)
set(ACLVMM_STAGE ${CMAKE_CURRENT_BINARY_DIR}/install-stage)

install(TARGETS ascendcl EXPORT aclvmmTargets
  LIBRARY DESTINATION ${ACLVMM_LIBDIR}
  INCLUDES DESTINATION include)
# A symlink in the build tree is installed as the same symlink (file(INSTALL) keeps links).
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/libacl_rt.so DESTINATION ${ACLVMM_LIBDIR})
install(DIRECTORY include/acl include/aclvmm DESTINATION include)
install(DIRECTORY DESTINATION bin)
# The device monitor (docs/smi.md): <root>/bin/aclvmm-smi, on PATH after sourcing set_env.sh.
install(TARGETS aclvmm-smi RUNTIME DESTINATION bin)

# CMake package.
install(EXPORT aclvmmTargets NAMESPACE aclvmm:: DESTINATION ${ACLVMM_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/aclvmmConfig.cmake.in
  ${ACLVMM_STAGE}/aclvmmConfig.cmake
  INSTALL_DESTINATION ${ACLVMM_CMAKEDIR}
  PATH_VARS ACLVMM_LIBDIR)
write_basic_package_version_file(${ACLVMM_STAGE}/aclvmmConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${ACLVMM_STAGE}/aclvmmConfig.cmake ${ACLVMM_STAGE}/aclvmmConfigVersion.cmake
  DESTINATION ${ACLVMM_CMAKEDIR})
# CMAKE_PREFIX_PATH=<root> finds the package through <root>/share/cmake/aclvmm: CMake searches
# <prefix>/lib64/cmake only where the platform has lib64 directories, which Debian and Ubuntu
# (multiarch) do not. The file there forwards to the package above; the version file is the same.
file(WRITE ${ACLVMM_STAGE}/share-cmake/aclvmmConfig.cmake
  "# find_package(aclvmm) with CMAKE_PREFIX_PATH=<root> on platforms without lib64 search paths:\n"
  "# the package is in <root>/${ACLVMM_CMAKEDIR} (docs/install.md).\n"
  "include(\"\${CMAKE_CURRENT_LIST_DIR}/../../../${ACLVMM_CMAKEDIR}/aclvmmConfig.cmake\")\n")
install(FILES ${ACLVMM_STAGE}/share-cmake/aclvmmConfig.cmake ${ACLVMM_STAGE}/aclvmmConfigVersion.cmake
  DESTINATION share/cmake/aclvmm)

# The build tree is a package too (-Daclvmm_DIR=<build> or CMAKE_PREFIX_PATH=<build>): the same
# targets exported with the build's paths (the library in <build>, the headers in the source
# tree), so a consumer can build against a tree that was never installed. The config file is
# the installed one's template with the build directory as its root and <build> as the library
# directory.
export(EXPORT aclvmmTargets NAMESPACE aclvmm:: FILE ${CMAKE_BINARY_DIR}/aclvmmTargets.cmake)
function(aclvmm_build_tree_config)
  set(ACLVMM_LIBDIR ${CMAKE_BINARY_DIR})
  configure_package_config_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/aclvmmConfig.cmake.in
    ${CMAKE_BINARY_DIR}/aclvmmConfig.cmake
    INSTALL_DESTINATION ${CMAKE_BINARY_DIR} INSTALL_PREFIX ${CMAKE_BINARY_DIR}
    PATH_VARS ACLVMM_LIBDIR)
endfunction()
aclvmm_build_tree_config()
configure_file(${ACLVMM_STAGE}/aclvmmConfigVersion.cmake ${CMAKE_BINARY_DIR}/aclvmmConfigVersion.cmake
  COPYONLY)

# pkg-config: aclvmm.pc, and one file per library name the vendor samples link by.
foreach(pc_pair IN ITEMS "aclvmm;ascendcl" "ascendcl;ascendcl" "acl_rt;acl_rt")
  list(GET pc_pair 0 ACLVMM_PC_NAME)
  list(GET pc_pair 1 ACLVMM_PC_LIB)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/aclvmm.pc.in ${ACLVMM_STAGE}/${ACLVMM_PC_NAME}.pc @ONLY)
  install(FILES ${ACLVMM_STAGE}/${ACLVMM_PC_NAME}.pc DESTINATION ${ACLVMM_LIBDIR}/pkgconfig)
endforeach()

# <arch>-linux/{include,lib64}: relative symlinks made in the build tree and installed as links.
set(ACLVMM_ARCH_DIR ${CMAKE_SYSTEM_PROCESSOR}-linux)
file(MAKE_DIRECTORY ${ACLVMM_STAGE}/${ACLVMM_ARCH_DIR})
foreach(sub include ${ACLVMM_LIBDIR})
  file(CREATE_LINK ../${sub} ${ACLVMM_STAGE}/${ACLVMM_ARCH_DIR}/${sub} SYMBOLIC)
endforeach()
install(DIRECTORY ${ACLVMM_STAGE}/${ACLVMM_ARCH_DIR} DESTINATION .)

# set_env.sh: the install prefix is known only at install time (cmake --install --prefix), so
# the file is configured then; file(INSTALL) honours DESTDIR and records it in the manifest.
install(CODE "
  set(ACLVMM_INSTALL_ROOT \"\${CMAKE_INSTALL_PREFIX}\")
  set(ACLVMM_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/scripts/set_env.sh.in\" \"${ACLVMM_STAGE}/set_env.sh\" @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}\" TYPE FILE FILES \"${ACLVMM_STAGE}/set_env.sh\")
")
install(FILES ${CMAKE_CURRENT_LIST_DIR}/setenv.bash DESTINATION bin)
