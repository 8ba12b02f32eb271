# leasehold_patched_copy(DIR FILE FROM TO): a copy of
# include/leasehold/impl/FILE with the text FROM replaced by TO, written to
# DIR/leasehold/impl/FILE, for a test build that breaks the library on purpose
# (DIR goes ahead of the real headers on that build's include path). Fails
# when FROM is no longer in FILE, so the break cannot silently stop applying.
# Nothing of it reaches the installed files.
function(leasehold_patched_copy dir file from to)
  set(source ${PROJECT_SOURCE_DIR}/include/leasehold/impl/${file})
  file(READ ${source} text)
  string(FIND "${text}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "leasehold_patched_copy: '${from}' is no longer in ${source}")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
  file(WRITE ${dir}/patched.tmp "${text}")
  # Rewritten only when it changed: no rebuild at every configure.
  configure_file(${dir}/patched.tmp ${dir}/leasehold/impl/${file} COPYONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
endfunction()
