# Install rules: the libraries, every public header, ember-compile, the CMake package
# (find_package(ember CONFIG) -> ember::ember) and a pkg-config file. LLVM and lld are linked
# statically into libember_compiler.so with their symbols hidden, and every LLVM include
# directory and library is PRIVATE to it, so the installed package names none of them: a project
# that uses ember needs no LLVM.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(EMBER_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ember CACHE STRING
    "Where emberConfig.cmake is installed, relative to the prefix")

install(TARGETS ember ember_compiler ember_dsl ember_runtime
        EXPORT emberTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                NAMELINK_COMPONENT development
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# The headers of each layer land side by side under include/ember/.
foreach(dir ${PROJECT_SOURCE_DIR}/include/ ${PROJECT_SOURCE_DIR}/compiler/include/
            ${PROJECT_SOURCE_DIR}/dsl/include/ ${PROJECT_SOURCE_DIR}/runtime/include/)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
          FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
endforeach()
if(TARGET ember-compile)
  install(TARGETS ember-compile RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()

install(EXPORT emberTargets NAMESPACE ember:: FILE emberTargets.cmake
        DESTINATION ${EMBER_INSTALL_CMAKEDIR} COMPONENT development)
# The build tree is a package too: find_package(ember) with ember_DIR=<build>/cmake-package.
export(EXPORT emberTargets NAMESPACE ember::
       FILE ${PROJECT_BINARY_DIR}/cmake-package/emberTargets.cmake)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/emberConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake-package/emberConfig.cmake
  INSTALL_DESTINATION ${EMBER_INSTALL_CMAKEDIR})
# Before 1.0 a minor version may change the API (CHANGELOG.md): a request for 0.1 accepts 0.1.x
# only. From 1.0 on this becomes SameMajorVersion.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ember_compatibility SameMinorVersion)
else()
  set(ember_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake-package/emberConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${ember_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/cmake-package/emberConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake-package/emberConfigVersion.cmake
        DESTINATION ${EMBER_INSTALL_CMAKEDIR} COMPONENT development)

# pkg-config: the same flags for builds without CMake. Paths are relative to ${pcfiledir}, so the
# installed prefix can be moved.
file(RELATIVE_PATH ember_pc_prefix
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" ember_pc_prefix "${ember_pc_prefix}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/ember.pc.in ${PROJECT_BINARY_DIR}/cmake-package/ember.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake-package/ember.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
set(ember_docs ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/README.md)
if(EXISTS ${PROJECT_SOURCE_DIR}/CHANGELOG.md)
  list(APPEND ember_docs ${PROJECT_SOURCE_DIR}/CHANGELOG.md)
endif()
install(FILES ${ember_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT development)
