# Enforces the module layering (docs/DESIGN.md §2) at configure and build time:
#  - tandem_layering (built with every build): cmake/check_layering.cmake
#    fails when a source file includes a header of a module above its own;
#  - at configure time: no front-end library (the router's, the load
#    generator's) links compute code, directly or through what it links.

# the targets `target` links, transitively (tandem's own targets only).
function(tandem_link_closure target out)
  set(seen "")
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue t)
    if(NOT TARGET ${t} OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(libs ${t} LINK_LIBRARIES)
    get_target_property(ilibs ${t} INTERFACE_LINK_LIBRARIES)
    foreach(l ${libs} ${ilibs})
      if(l MATCHES "^tandem_")
        list(APPEND queue ${l})
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

set(TANDEM_FRONT_END_LIBS tandem_openai tandem_router_metrics tandem_generate tandem_router_grpc
    tandem_frontend tandem_cluster tandem_loadgen tandem_router_sim tandem_planner tandem_planner_sim)
set(TANDEM_COMPUTE_LIBS tandem_engine tandem_model tandem_kernels tandem_kvcache tandem_kv_tiers tandem_hip_emu
    tandem_backends tandem_hip tandem_cuda)
foreach(lib ${TANDEM_FRONT_END_LIBS})
  tandem_link_closure(${lib} closure)
  foreach(compute ${TANDEM_COMPUTE_LIBS})
    if(compute IN_LIST closure)
      message(FATAL_ERROR "${lib} links ${compute} (closure: ${closure}): a front end must not link compute code")
    endif()
  endforeach()
endforeach()
message(STATUS "layering: ${TANDEM_FRONT_END_LIBS} link no compute library")

add_custom_target(tandem_layering ALL
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -P ${CMAKE_SOURCE_DIR}/cmake/check_layering.cmake
  COMMENT "checking that no module includes one above it"
  VERBATIM)
