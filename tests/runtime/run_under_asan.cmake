# Builds the runtime tests with AddressSanitizer and UndefinedBehaviorSanitizer in a build folder
# of their own and runs them (ctest runtime_asan, label slow): the plan reader's truncation and
# corruption suites, the engine and the C API then prove they read no byte out of bounds.
# Arguments: -DSOURCE_DIR=<repo> -DBINARY_DIR=<folder for the ASan build> -DSHARED_DIR=<shared>
foreach(step configure build run)
  if(step STREQUAL "configure")
    set(cmd ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -DQCC_ASAN=ON
            -DQCC_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQCC_SHARED_DIR=${SHARED_DIR})
  elseif(step STREQUAL "build")
    set(cmd ${CMAKE_COMMAND} --build ${BINARY_DIR} --target runtime_test -j 2)
  else()
    set(cmd ${BINARY_DIR}/tests/runtime_test)
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "runtime_asan: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
string(REGEX MATCH "\\[  PASSED  \\] [0-9]+ tests" passed "${out}")
message(STATUS "runtime_asan: ${passed} under ASan+UBSan")
