# cmake/EmberBuildId.cmake, run as the build runs it: the identity changes with a source's
# content, a flag and an LLVM library's size; it is the same for the same inputs (in another
# directory too), and an unchanged identity leaves the header untouched (nothing recompiles).
# Run with -DSCRIPT=<cmake/EmberBuildId.cmake> -DWORK=<scratch directory>.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/src/lib" "${WORK}/copy/lib")

function(build_id dir inputs out)
  file(WRITE "${WORK}/inputs.txt" "${inputs}")
  execute_process(COMMAND ${CMAKE_COMMAND} -DINPUTS=${WORK}/inputs.txt -DSOURCE_DIR=${dir}
                          -DOUTPUT=${WORK}/EmberBuildId.h -P ${SCRIPT} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "EmberBuildId.cmake failed: ${rc}")
  endif()
  file(STRINGS "${WORK}/EmberBuildId.h" line REGEX "EMBER_COMPILER_BUILD_ID")
  string(REGEX MATCH "[0-9a-f]+\"$" id "${line}")
  string(LENGTH "${id}" length)
  if(NOT length EQUAL 65)
    message(FATAL_ERROR "no SHA-256 in: ${line}")
  endif()
  set(${out} "${id}" PARENT_SCOPE)
endfunction()

function(expect_ne a b what)
  if(a STREQUAL b)
    message(FATAL_ERROR "the build identity did not change with ${what}")
  endif()
endfunction()

file(WRITE "${WORK}/src/lib/CodeGen.cpp" "int codegen() { return 1; }\n")
file(WRITE "${WORK}/libLLVMFake.a" "0123456789")
set(inputs "src lib/CodeGen.cpp\nsize ${WORK}/libLLVMFake.a\ntext cxx GNU 12.2.0\ntext cxx-flags -O3 -DNDEBUG\n")
build_id("${WORK}/src" "${inputs}" base)
file(TIMESTAMP "${WORK}/EmberBuildId.h" stamp "%s")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
build_id("${WORK}/src" "${inputs}" again)
file(TIMESTAMP "${WORK}/EmberBuildId.h" stamp_again "%s")
if(NOT again STREQUAL base OR NOT stamp_again STREQUAL stamp)
  message(FATAL_ERROR "same inputs: ${base} then ${again}, header rewritten: ${stamp} ${stamp_again}")
endif()

file(COPY "${WORK}/src/lib/CodeGen.cpp" DESTINATION "${WORK}/copy/lib")
build_id("${WORK}/copy" "${inputs}" copy)
if(NOT copy STREQUAL base)
  message(FATAL_ERROR "another checkout of the same sources has another identity")
endif()

file(WRITE "${WORK}/src/lib/CodeGen.cpp" "int codegen() { return 2; }\n")
build_id("${WORK}/src" "${inputs}" edited)
expect_ne("${edited}" "${base}" "an edited source")

string(REPLACE "-O3" "-O2" inputs_o2 "${inputs}")
build_id("${WORK}/src" "${inputs_o2}" flags)
expect_ne("${flags}" "${edited}" "another flag")

string(REPLACE "12.2.0" "13.1.0" inputs_cxx "${inputs}")
build_id("${WORK}/src" "${inputs_cxx}" cxx)
expect_ne("${cxx}" "${edited}" "another C++ compiler")

file(WRITE "${WORK}/libLLVMFake.a" "01234567890")
build_id("${WORK}/src" "${inputs}" llvm)
expect_ne("${llvm}" "${edited}" "another LLVM library")
file(REMOVE_RECURSE "${WORK}")
message(STATUS "build identity: ok")
