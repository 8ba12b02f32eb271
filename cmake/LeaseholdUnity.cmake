# Unity builds of leasehold's own test programs: each batch of source files is
# compiled as one translation unit, so GoogleTest, Asio and leasehold's headers
# are parsed once per batch rather than once per file. Only for targets named
# here (never the library, nothing a user's build inherits); each file keeps its
# helpers in its own namespace (<dir>_<file>) so that files merge cleanly.
# LEASEHOLD_UNITY_TESTS=OFF compiles file by file, e.g. to find which file a
# diagnostic comes from.
function(leasehold_unity target)
  if(LEASEHOLD_UNITY_TESTS)
    # 8 files a batch: a few batches per program, enough to keep two cores busy.
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
