# What `cmake --install` puts under the prefix: the library (with llama.cpp's libraries it loads,
# beside it), the public headers, the CMake package (find_package(schemaweaver) gives the target
# schemaweaver::schemaweaver) and schemaweaver.pc for pkg-config; and the CLI where it is built.
include(CMakePackageConfigHelpers)

install(TARGETS schemaweaver EXPORT schemaweaverTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/schemaweaver DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# libllama and libggml* of the build this library was linked with (and their version links).
install(DIRECTORY ${SW_LLAMA_LIBDIR}/ DESTINATION ${CMAKE_INSTALL_LIBDIR} USE_SOURCE_PERMISSIONS
        FILES_MATCHING PATTERN "libllama.so*" PATTERN "libggml*.so*" PATTERN "cmake" EXCLUDE PATTERN "pkgconfig" EXCLUDE)

set(SW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/schemaweaver)
install(EXPORT schemaweaverTargets NAMESPACE schemaweaver:: DESTINATION ${SW_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/schemaweaverConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/schemaweaverConfig.cmake INSTALL_DESTINATION ${SW_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/schemaweaverConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/schemaweaverConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/schemaweaverConfigVersion.cmake
        DESTINATION ${SW_CMAKE_DIR})

file(RELATIVE_PATH SW_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" SW_PC_TO_PREFIX "${SW_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/schemaweaver.pc.in ${CMAKE_CURRENT_BINARY_DIR}/schemaweaver.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/schemaweaver.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(SCHEMAWEAVER_BUILD_APPS)
  install(TARGETS schemaweaver-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
