# Project-wide warning and sanitizer flags, applied to leasehold's own targets
# through leasehold_strict(<target>) so that consumers never inherit them.

function(leasehold_strict target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(LEASEHOLD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(LEASEHOLD_SANITIZE)
  add_compile_options(-fsanitize=${LEASEHOLD_SANITIZE} -fno-omit-frame-pointer ${LEASEHOLD_DEBUG_FLAG})
  add_link_options(-fsanitize=${LEASEHOLD_SANITIZE})
  if(LEASEHOLD_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 warns that TSan cannot see the atomic_thread_fence in Asio's headers.
    add_compile_options(-Wno-tsan)
  endif()
  if(LEASEHOLD_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()
