# Helpers to build the C++ core and the `_sot` extension module once per Python interpreter.
#
# The core is compiled against each interpreter's own headers (its bytecode, frame layout and C API differ per
# version), so every interpreter gets its own static core library and its own module. All modules land in the one
# package folder build/python/sot/ under their ABI-tagged names (_sot.cpython-311-x86_64-linux-gnu.so, ...), and
# each interpreter imports its own.

# sot_python_info(<exe> <prefix>) sets <prefix>_INCLUDE, <prefix>_EXT_SUFFIX, <prefix>_VERSION (e.g. 3.12)
# and <prefix>_TAG (e.g. 312).
function(sot_python_info exe prefix)
  execute_process(
    COMMAND ${exe} -c "import sys, sysconfig; print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('EXT_SUFFIX')); print('%d.%d' % sys.version_info[:2]); print('%d%d' % sys.version_info[:2])"
    OUTPUT_VARIABLE out RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "Cannot query Python interpreter ${exe}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  list(GET lines 0 inc)
  list(GET lines 1 suffix)
  list(GET lines 2 ver)
  list(GET lines 3 tag)
  set(${prefix}_INCLUDE ${inc} PARENT_SCOPE)
  set(${prefix}_EXT_SUFFIX ${suffix} PARENT_SCOPE)
  set(${prefix}_VERSION ${ver} PARENT_SCOPE)
  set(${prefix}_TAG ${tag} PARENT_SCOPE)
endfunction()

# sot_enable_warnings(<target>): the project's warning set on one of our own targets.
function(sot_enable_warnings target)
  target_compile_options(${target} PRIVATE ${SOT_WARNING_FLAGS})
endfunction()

# sot_add_extension(<exe> CORE_SOURCES ... MODULE_SOURCES ...): builds sot_core_<tag> (static, PIC) and the
# module _sot for interpreter <exe>. Sets SOT_LAST_TAG in the caller's scope.
function(sot_add_extension exe)
  cmake_parse_arguments(ARG "" "" "CORE_SOURCES;MODULE_SOURCES" ${ARGN})
  sot_python_info(${exe} PY)
  set(core sot_core_${PY_TAG})
  # The opcode table comes from this interpreter's own opcode module, generated at build time.
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/generated/${PY_TAG})
  set(gen_script ${PROJECT_SOURCE_DIR}/extension/src/bytecode/gen_opcode_table.py)
  add_custom_command(OUTPUT ${gen_dir}/opcode_table.inc
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}
    COMMAND ${exe} ${gen_script} ${gen_dir}/opcode_table.inc
    DEPENDS ${gen_script} VERBATIM
    COMMENT "Generating the opcode table of Python ${PY_VERSION}")
  add_library(${core} STATIC ${ARG_CORE_SOURCES} ${gen_dir}/opcode_table.inc)
  target_include_directories(${core} PRIVATE ${gen_dir})
  set_target_properties(${core} PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden)
  target_include_directories(${core} PUBLIC ${PROJECT_SOURCE_DIR}/extension/src)
  target_include_directories(${core} SYSTEM PUBLIC ${PY_INCLUDE})
  target_link_libraries(${core} PUBLIC pybind11::headers)
  target_compile_definitions(${core} PUBLIC SOT_VERSION="${PROJECT_VERSION}")
  if(SOT_OPENMP AND SOT_LIBOMP)
    target_link_libraries(${core} PUBLIC ${SOT_LIBOMP})  # cpu_threads.cpp's pool (extension/CMakeLists.txt)
  endif()
  sot_enable_warnings(${core})

  set(mod _sot_${PY_TAG})
  add_library(${mod} MODULE ${ARG_MODULE_SOURCES})
  target_link_libraries(${mod} PRIVATE ${core})
  set_target_properties(${mod} PROPERTIES
    OUTPUT_NAME _sot PREFIX "" SUFFIX "${PY_EXT_SUFFIX}"
    CXX_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${SOT_PYTHON_DIR}/sot)
  # Extension modules never link libpython: the interpreter that imports them provides the symbols.
  target_link_options(${mod} PRIVATE -Wl,--as-needed)
  sot_enable_warnings(${mod})
  set_property(GLOBAL APPEND PROPERTY SOT_PYTHON_TAGS ${PY_TAG})
  set_property(GLOBAL PROPERTY SOT_PYTHON_EXE_${PY_TAG} ${exe})
  set(SOT_LAST_TAG ${PY_TAG} PARENT_SCOPE)
endfunction()

# sot_copy_python_tree(<target> <source-root> <package-dirs...>): copies the .py files of packages into
# build/python at build time, keeping them up to date when sources change.
function(sot_copy_python_tree target src_root)
  set(outputs)
  foreach(pkg ${ARGN})
    file(GLOB_RECURSE files CONFIGURE_DEPENDS RELATIVE ${src_root} ${src_root}/${pkg}/*.py)
    foreach(f ${files})
      set(out ${SOT_PYTHON_DIR}/${f})
      add_custom_command(OUTPUT ${out}
        COMMAND ${CMAKE_COMMAND} -E copy_if_different ${src_root}/${f} ${out}
        DEPENDS ${src_root}/${f} VERBATIM)
      list(APPEND outputs ${out})
    endforeach()
  endforeach()
  add_custom_target(${target} ALL DEPENDS ${outputs})
endfunction()
