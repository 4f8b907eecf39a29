# add_stage_library(name SOURCES... [DEPENDS targets...] [LINK_LIBS libs...])
#
# A static library of the project compiled with LLVM's flags and linked
# against Debian's libMLIR.so/libLLVM.so. Linking the shared libraries keeps
# every MLIR global (dialect and pass registries, cl::opts) in one copy. As
# LLVM's own libraries, every .cpp of the directory must be listed.
function(add_stage_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LINK_LIBS" ${ARGN})
  llvm_check_source_file_list(${ARG_UNPARSED_ARGUMENTS})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  llvm_update_compile_flags(${name})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS} MLIR LLVM)
endfunction()
