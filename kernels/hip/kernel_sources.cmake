# The kernel sources of kernels/hip (one op a pair of files), relative to
# this directory: one list for every build of them (kernels/hip/CMakeLists.txt
# and the stand-alone GPU check project, bench/gpu/CMakeLists.txt).
set(TANDEM_HIP_KERNEL_SOURCES
  embedding.cc
  rms_norm.cc
  rope.cc
  gemm.cc
  gemv.cc
  gemm_quant.cc
  gemv_quant.cc
  quantize_act.cc
  convert.cc
  gpu_blas.cc
  attention_prefill.cc
  attention_prefill_mma.cc
  attention_decode.cc
  silu_mul.cc
  residual_add.cc
  gather_rows.cc
  moe_route.cc
  moe_experts.cc
  hip_backend_moe.cc
  hip_backend_sampling.cc
  kv_cache.cc
  sampling.cc)

# the sources a GPU compiler builds (the kernels and the hip backend), from
# the repository root (kernels/hip/gpu_objects.cmake takes them so).
set(TANDEM_GPU_SOURCES)
foreach(src ${TANDEM_HIP_KERNEL_SOURCES} hip_backend.cc)
  list(APPEND TANDEM_GPU_SOURCES kernels/hip/${src})
endforeach()
