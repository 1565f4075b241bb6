# Configures and builds TARGETS ('|'-separated) with a sanitizer in a build folder of their own:
# SANITIZER=ASAN (AddressSanitizer and UndefinedBehaviorSanitizer, with clang and the libFuzzer
# targets; ctest asan_build) or TSAN (ThreadSanitizer, gcc; ctest tsan_build). The fixtures of
# the *_asan, fuzz_* and *_tsan tests.
# Arguments: -DSOURCE_DIR=<repo> -DBINARY_DIR=<build folder> -DSHARED_DIR=<shared>
#            -DTARGETS=<target|target|...> -DSANITIZER=ASAN|TSAN
string(REPLACE "|" ";" targets "${TARGETS}")
string(TOLOWER "${SANITIZER}" name)
foreach(step configure build)
  if(step STREQUAL "configure")
    set(cmd ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -DQCC_${SANITIZER}=ON
            -DQCC_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQCC_SHARED_DIR=${SHARED_DIR})
    # -O1 and line tables only (file:line in every report, no variable info): the instrumented
    # build is the longest step of CI, and full -O2 -g made it about a fifth slower to compile.
    # The test sources themselves build at -O0 (tests/CMakeLists.txt).
    if(SANITIZER STREQUAL "ASAN")
      # clang, so that the same build also gives the libFuzzer targets (fuzz/CMakeLists.txt).
      list(APPEND cmd -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DQCC_FUZZ=ON
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG"
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG")
    else()
      list(APPEND cmd "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
    endif()
  else()
    set(cmd ${CMAKE_COMMAND} --build ${BINARY_DIR} --target ${targets} -j 2)
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}_build: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "${name}_build: built ${targets} with ${SANITIZER} in ${BINARY_DIR}")
