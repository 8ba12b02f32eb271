# leasehold_heavy_tests(TARGET REGEX): the tests of TARGET (listed by a
# gtest_discover_tests call before this one) whose names match REGEX take two
# of ctest's slots (PROCESSORS 2). The test command runs three times as
# many tests as there are cores, because most of them wait on timers; those
# that start a Cluster, a Sentinel set-up or a fleet of processes keep the cores
# from being crowded. The names are known only once the tests are built, so
# this runs in ctest, after the include file the discovery wrote.
function(leasehold_heavy_tests target regex)
  set(file ${CMAKE_CURRENT_BINARY_DIR}/${target}_heavy.cmake)
  file(WRITE ${file}
    "foreach(t IN LISTS ${target}_TESTS)\n"
    "  if(t MATCHES [==[${regex}]==])\n"
    "    set_tests_properties(\"\${t}\" PROPERTIES PROCESSORS 2)\n"
    "  endif()\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()
