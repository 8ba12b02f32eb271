# How much debug information leasehold's own targets carry.
#   full   what the build type gives (-g in Debug and RelWithDebInfo), and -g
#          with the sanitizers: the default
#   lines  -g1 instead (clang: line tables only): file:line and function
#          names in backtraces, sanitizer reports and profiles, no variables
#          or types for a debugger. A test file compiles about a third faster
#          and the test programs link smaller; CI (.ci/run) builds with it.
# LEASEHOLD_DEBUG_FLAG is the flag the sanitizer and fuzzer options use.
set(LEASEHOLD_DEBUG_INFO full CACHE STRING "Debug information: full (the build type's) | lines (-g1)")
set_property(CACHE LEASEHOLD_DEBUG_INFO PROPERTY STRINGS full lines)
if(LEASEHOLD_DEBUG_INFO STREQUAL "full")
  set(LEASEHOLD_DEBUG_FLAG -g)
elseif(LEASEHOLD_DEBUG_INFO STREQUAL "lines")
  set(LEASEHOLD_DEBUG_FLAG -g1)
  # After the build type's -g on the command line, so it wins; only where the
  # build type has debug information at all.
  add_compile_options($<$<CONFIG:Debug,RelWithDebInfo>:-g1>)
else()
  message(FATAL_ERROR "LEASEHOLD_DEBUG_INFO must be full or lines, not '${LEASEHOLD_DEBUG_INFO}'")
endif()
