# Configures and builds TARGETS ('|'-separated) with AddressSanitizer and UndefinedBehaviorSanitizer
# in a build folder of their own (ctest asan_build, the fixture of the *_asan tests, label slow).
# Arguments: -DSOURCE_DIR=<repo> -DBINARY_DIR=<folder for the ASan build> -DSHARED_DIR=<shared>
#            -DTARGETS=<target|target|...>
string(REPLACE "|" ";" targets "${TARGETS}")
foreach(step configure build)
  if(step STREQUAL "configure")
    set(cmd ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -DQCC_ASAN=ON
            -DQCC_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQCC_SHARED_DIR=${SHARED_DIR})
  else()
    set(cmd ${CMAKE_COMMAND} --build ${BINARY_DIR} --target ${targets} -j 2)
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "asan_build: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "asan_build: built ${targets} with ASan+UBSan in ${BINARY_DIR}")
