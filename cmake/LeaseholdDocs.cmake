# The `docs` target: Doxygen's HTML reference of the public headers, in
# <build>/docs/html, with README.md and docs/*.md as pages. It fails on any
# Doxygen warning, above all an undocumented public symbol (.ci/run builds
# it). Defined only in a top-level build (a parent project may have its own
# `docs`) and only when Doxygen is installed; configuring never needs it.
if(NOT LEASEHOLD_IS_TOP)
  return()
endif()
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "leasehold: Doxygen not found, no 'docs' target (scripts/deps.sh installs it)")
  return()
endif()

set(LEASEHOLD_DOCS_OUTPUT ${PROJECT_BINARY_DIR}/docs)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${LEASEHOLD_DOCS_OUTPUT}/Doxyfile @ONLY)
add_custom_target(docs
  COMMAND Doxygen::doxygen ${LEASEHOLD_DOCS_OUTPUT}/Doxyfile
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "API reference: ${LEASEHOLD_DOCS_OUTPUT}/html/index.html"
  VERBATIM)
