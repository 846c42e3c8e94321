# The kernel sources through a GPU compiler, one custom command a source (not
# CMake's HIP or CUDA language: Debian's hipcc is no full ROCm tree, and one
# custom command a source keeps both vendors alike). Used by the tandem build
# (kernels/hip/CMakeLists.txt) and by the gRPC-free tandem_gpu_check project
# (bench/gpu/kernel_objects), both from a directory whose build directory is
# <build>/kernels/hip: the compiler runs there, on the same command line, and
# CCACHE_BASEDIR makes every path in it relative to there. Two builds of one
# vendor at the same depth (the CI's hipbuild and gpucheck_build tests,
# tests/kernels/hip and tests/bench/gpu) then compile each kernel once: the
# second is all cache hits.
#
# tandem_gpu_objects(<out var> VENDOR hip|cuda COMPILER <path> ARCHS <list>
#                    SOURCES <paths from the repository root>
#                    [INCLUDES <dirs>] [LAUNCHER <command>...] [WERROR <bool>])
#   ARCHS: AMD targets (gfx90a) for hip, compute capabilities (90) for cuda.
#   INCLUDES: besides the repository root; the compiler's own are dropped.
#   WERROR: warnings fail the compile (-Wall for hipcc, all of nvcc's); the
#   CI's builds set it (TANDEM_GPU_WERROR), a user's build with another
#   compiler version does not.
function(tandem_gpu_objects out)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "VENDOR;COMPILER;WERROR" "ARCHS;SOURCES;INCLUDES;LAUNCHER")
  get_filename_component(root ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../.. REALPATH)
  if(arg_VENDOR STREQUAL "hip")
    set(flags -x hip -std=c++20 -O3 -fPIC)
    foreach(arch ${arg_ARCHS})
      list(APPEND flags --offload-arch=${arch})
    endforeach()
    if(arg_WERROR)
      list(APPEND flags -Werror -Wall -Wno-unused-parameter)
    endif()
  elseif(arg_VENDOR STREQUAL "cuda")
    set(flags -x cu -std=c++20 -O3 -Xcompiler=-fPIC)
    foreach(arch ${arg_ARCHS})
      list(APPEND flags -gencode=arch=compute_${arch},code=sm_${arch})
    endforeach()
    if(arg_WERROR)
      list(APPEND flags -Werror all-warnings)
    endif()
  else()
    message(FATAL_ERROR "tandem_gpu_objects: VENDOR must be hip or cuda, not '${arg_VENDOR}'")
  endif()
  list(APPEND flags -I${root})
  list(REMOVE_DUPLICATES arg_INCLUDES)
  foreach(dir ${arg_INCLUDES})
    if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
      list(APPEND flags -I${dir})
    endif()
  endforeach()

  if(NOT CMAKE_CURRENT_BINARY_DIR STREQUAL "${CMAKE_BINARY_DIR}/kernels/hip")
    message(FATAL_ERROR "tandem_gpu_objects: call it from <build>/kernels/hip, not ${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  set(obj_dir ${CMAKE_CURRENT_BINARY_DIR}/gpu_objects_${arg_VENDOR})
  # hipcc (clang) leaves an empty directory in TMPDIR for each offload target
  # of each compile (4 386 had piled up in /tmp): they go in the build's own.
  set(tmp_dir ${obj_dir}/tmp)
  set(objects)
  foreach(src ${arg_SOURCES})
    get_filename_component(stem ${src} NAME_WE)
    set(obj ${obj_dir}/${stem}.o)
    add_custom_command(OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${tmp_dir}
      COMMAND ${CMAKE_COMMAND} -E env TMPDIR=${tmp_dir}
              ${arg_LAUNCHER} ${arg_COMPILER} ${flags} -MD -MF ${obj}.d -c ${root}/${src} -o ${obj}
      DEPENDS ${root}/${src}
      DEPFILE ${obj}.d
      COMMENT "${arg_VENDOR}: ${src}"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set_source_files_properties(${objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set(${out} ${objects} PARENT_SCOPE)
endfunction()
