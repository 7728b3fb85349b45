#include "quant/tensor_map.h"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <string>

namespace fp4kit::quant {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn(Status* err) {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static Status status = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr) {
      cudaGetLastError();
      return Status(StatusCode::kCudaError, std::string("cuTensorMapEncodeTiled unavailable: ") + cudaGetErrorString(e));
    }
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    return Status::ok();
  }();
  *err = status;
  return fn;
}

}  // namespace

Status make_tensor_map_2d(CUtensorMap* map, const void* base, int elem_bytes, int64_t rows, int64_t cols,
                          int64_t row_bytes, uint32_t box_rows, uint32_t box_cols) {
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0 || row_bytes % 16 != 0)
    return Status(StatusCode::kMisaligned, "tensor map: base and row stride must be 16-byte aligned");
  Status st;
  PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn(&st);
  if (!st.is_ok()) return st;
  const CUtensorMapDataType type = elem_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32 : CU_TENSOR_MAP_DATA_TYPE_UINT16;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(row_bytes)};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = fn(map, type, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status(StatusCode::kCudaError, "cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)));
  return Status::ok();
}

}  // namespace fp4kit::quant
