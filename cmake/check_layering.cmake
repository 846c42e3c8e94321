# Fails when a source file includes a header of a module it may not use.
# Run on every build (cmake -P, target tandem_layering in CMakeLists.txt)
# with -DROOT=<source dir>. The rules are the layering of docs/DESIGN.md,
# from the bottom up: a module may include its own headers and those of the
# modules listed for it, nothing else of tandem's. A module nested in
# another (kvcache/tiers/ in kvcache/) is a module of its own: the outer one
# may include it only when it is listed. Third-party includes (absl/,
# grpcpp/, ...) are not checked.
#
#   "module (path prefix)=what it may include (path prefixes, comma-separated)"
set(TANDEM_LAYERS
  "common/=common/"
  "generation/="
  "proto/=generation/,proto/,tandem/"
  "kvcache/tiers/=common/,kvcache/"
  "kvcache/=common/"
  "kernels/=common/,kvcache/kv_layout.h"
  "formats/=common/"
  "text/=common/,formats/"
  "server/model/=common/,formats/"
  "server/engine/=common/,generation/,kvcache/,kernels/,formats/,text/,server/model/"
  "server/kv_transport/=common/,kvcache/,proto/,tandem/"
  "server/worker/=common/,generation/,kvcache/,kernels/,formats/,text/,proto/,tandem/,server/"
  "router/=common/,generation/,proto/,tandem/,kvcache/prefix_hash.h,formats/,text/"
  "planner/=common/,generation/,proto/,tandem/"
  "bench/router_sim/=common/,generation/,proto/,tandem/,kvcache/prefix_hash.h,router/,bench/loadgen/"
  "bench/planner_sim/=common/,generation/,proto/,tandem/,kvcache/prefix_hash.h,router/,bench/loadgen/,bench/router_sim/,planner/"
  "bench/loadgen/=common/,generation/,proto/,tandem/,formats/,text/"
  "bench/=common/,generation/,proto/,tandem/,kvcache/,kernels/,formats/,text/,server/"
  "cli/=common/,generation/,proto/,tandem/,kvcache/,kernels/,formats/,text/,server/,router/,planner/,bench/"
  # the libFuzzer targets drive any parser below the binary; nothing includes them.
  "fuzz/=common/,generation/,proto/,tandem/,kvcache/,kernels/,formats/,text/,server/,router/,planner/,bench/"
)
# the first path component of every tandem include.
set(TANDEM_TOP "common|generation|proto|tandem|kvcache|kernels|formats|text|server|router|planner|bench|cli|fuzz|tests")

if(NOT ROOT)
  message(FATAL_ERROR "check_layering.cmake: -DROOT=<source dir> is required")
endif()

set(violations "")
set(checked 0)
file(GLOB_RECURSE sources RELATIVE ${ROOT}
  ${ROOT}/common/*.h ${ROOT}/common/*.cc ${ROOT}/generation/*.h ${ROOT}/generation/*.cc
  ${ROOT}/proto/*.h ${ROOT}/proto/*.cc ${ROOT}/kvcache/*.h ${ROOT}/kvcache/*.cc
  ${ROOT}/kernels/*.h ${ROOT}/kernels/*.cc ${ROOT}/formats/*.h ${ROOT}/formats/*.cc
  ${ROOT}/text/*.h ${ROOT}/text/*.cc ${ROOT}/server/*.h ${ROOT}/server/*.cc
  ${ROOT}/router/*.h ${ROOT}/router/*.cc ${ROOT}/planner/*.h ${ROOT}/planner/*.cc
  ${ROOT}/bench/*.h ${ROOT}/bench/*.cc ${ROOT}/cli/*.h ${ROOT}/cli/*.cc
  ${ROOT}/fuzz/*.h ${ROOT}/fuzz/*.cc)
# the module of `path`: the prefix of the first rule it starts with ("" for none).
function(tandem_module_of path out)
  set(${out} "" PARENT_SCOPE)
  foreach(rule ${TANDEM_LAYERS})
    string(REGEX REPLACE "=.*" "" prefix "${rule}")
    string(FIND "${path}" "${prefix}" at)
    if(at EQUAL 0)
      set(${out} ${prefix} PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

foreach(src ${sources})
  # the module: the first rule whose prefix the file's path starts with.
  set(allowed "")
  set(module "")
  foreach(rule ${TANDEM_LAYERS})
    string(REGEX REPLACE "=.*" "" prefix "${rule}")
    string(FIND "${src}" "${prefix}" at)
    if(at EQUAL 0)
      string(REGEX REPLACE "^[^=]*=" "" allowed "${rule}")
      string(REPLACE "," ";" allowed "${allowed}")
      set(module ${prefix})
      break()
    endif()
  endforeach()
  if(module STREQUAL "")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  file(STRINGS ${ROOT}/${src} includes REGEX "^#include \"(${TANDEM_TOP})/")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
    set(ok FALSE)
    tandem_module_of("${header}" header_module)
    if(header_module STREQUAL module)
      set(ok TRUE)
    endif()
    foreach(p ${allowed})
      string(FIND "${header}" "${p}" at)
      if(at EQUAL 0)
        set(ok TRUE)
        break()
      endif()
    endforeach()
    if(NOT ok)
      string(APPEND violations "\n  ${src} (${module}) includes ${header}")
    endif()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "check_layering.cmake: no sources found under ${ROOT}")
endif()
if(violations)
  message(FATAL_ERROR "a module includes one above it (see cmake/check_layering.cmake):${violations}")
endif()
