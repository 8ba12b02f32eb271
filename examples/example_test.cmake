# leasehold_example_test(<example>): when leasehold's own test suite is built,
# adds <example>_test.cpp (beside the example) as a ctest that runs the example
# briefly against a redis-server the test harness starts.
function(leasehold_example_test example)
  if(NOT TARGET leasehold_test_support)
    return()
  endif()
  find_package(GTest REQUIRED)
  include(GoogleTest)
  add_executable(${example}_test ${CMAKE_CURRENT_SOURCE_DIR}/${example}_test.cpp)
  target_link_libraries(${example}_test PRIVATE leasehold_test_support GTest::gtest_main)
  target_compile_definitions(${example}_test PRIVATE EXAMPLE_BINARY="$<TARGET_FILE:${example}>")
  add_dependencies(${example}_test ${example})
  leasehold_strict(${example}_test)
  gtest_discover_tests(${example}_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120 LABELS integration)
endfunction()
