# Installs the library, its headers, a CMake package (leasehold::leasehold,
# and leasehold::prometheus when built) and a pkg-config file; tools/ installs the CLI. tests/consumer/run.sh checks
# all of it from a clean prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS leasehold EXPORT leaseholdTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/leasehold DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(LEASEHOLD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/leasehold)
install(EXPORT leaseholdTargets NAMESPACE leasehold:: DESTINATION ${LEASEHOLD_CMAKE_DIR})
# The optional component has its own export set, so that the base package
# never needs prometheus-cpp; leaseholdConfig.cmake loads it on request
# (COMPONENTS prometheus).
if(TARGET leasehold_prometheus)
  install(TARGETS leasehold_prometheus EXPORT leaseholdPrometheusTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/prometheus/include/leasehold DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT leaseholdPrometheusTargets NAMESPACE leasehold:: DESTINATION ${LEASEHOLD_CMAKE_DIR})
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/leaseholdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/leaseholdConfig.cmake INSTALL_DESTINATION ${LEASEHOLD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/leaseholdConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/leaseholdConfig.cmake ${PROJECT_BINARY_DIR}/leaseholdConfigVersion.cmake
        DESTINATION ${LEASEHOLD_CMAKE_DIR})

set(LEASEHOLD_PC_REQUIRES "hiredis fmt")
if(LEASEHOLD_TLS)
  string(APPEND LEASEHOLD_PC_REQUIRES " openssl")
  set(LEASEHOLD_PC_CFLAGS "-DLEASEHOLD_HAS_TLS=1")
endif()
# The .pc file finds the prefix relative to itself (${pcfiledir}), so that it
# stays right after `cmake --install --prefix` elsewhere or a moved tree.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(LEASEHOLD_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _leasehold_pc_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  set(LEASEHOLD_PC_PREFIX "\${pcfiledir}/${_leasehold_pc_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(LEASEHOLD_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(LEASEHOLD_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/leasehold.pc.in ${PROJECT_BINARY_DIR}/leasehold.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/leasehold.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
