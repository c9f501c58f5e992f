// Python bindings: solvers._kernels, the solver's GPU kernels. Arguments are plain integers
// (device pointers, a stream, hpcolls' dtype codes); the column AllReduce goes to hpcolls through
// its C entry (a capsule: hpcolls.c_api), or back into Python (`fallback`) where that does not
// carry it.
#include <Python.h>

#include <optional>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cuda_check.h"
#include "hemv_lower.h"
#include "panel_cholqr2.h"
#include "panel_factors.h"
#include "hpcolls_entry.h"
#include "ormtr_sb2st.h"
#include "sb2st.h"
#include "stein.h"
#include "sytrd_fused.h"
#include "sytrd_panel.h"

namespace py = pybind11;
using namespace solvers;

namespace {

struct NoDeviceError : std::runtime_error { using std::runtime_error::runtime_error; };

// A build for a machine without a GPU (HPCOLLS_CUDA_ARCHITECTURES=no-gpu, CMakeLists.txt) holds
// unoptimized PTX only: its GPU calls refuse even where there is a device, and say why.
#ifdef HPCOLLS_NO_GPU_CODE
constexpr bool kGpuCode = false;
#else
constexpr bool kGpuCode = true;
#endif

void require_device(const char* what) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) {
    if (kGpuCode) return;
    throw NoDeviceError(std::string("solvers._kernels.") + what +
                        ": built without GPU code (HPCOLLS_CUDA_ARCHITECTURES=no-gpu); rebuild it here");
  }
  (void)cudaGetLastError();
  throw NoDeviceError(std::string("solvers._kernels.") + what + ": no CUDA device visible" +
                      (err != cudaSuccess ? std::string(" (") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err) + ")"
                                          : std::string()));
}

// hpcolls' function table, imported on first use (the module imports without hpcolls).
const hpcolls_c_api* hpcolls_api() {
  static const hpcolls_c_api* api = nullptr;
  if (api != nullptr) return api;
  const auto* found = static_cast<const hpcolls_c_api*>(PyCapsule_Import(HPCOLLS_C_API_CAPSULE, 0));
  if (found == nullptr) throw py::error_already_set();
  if (found->version < 1 || !HPCOLLS_C_API_HAS(found, last_error))
    throw std::runtime_error("solvers: hpcolls' C entry (version " + std::to_string(found->version) + ", " +
                             std::to_string(found->struct_size) + " bytes) lacks what c_api.h version " +
                             std::to_string(HPCOLLS_C_API_VERSION) + " has");
  api = found;
  return api;
}

// The handle of hpcolls.c_api.comm_capsule(), checked against what the caller expects; None: empty.
HpcollsComm comm_from(const py::object& handle, int device, int nranks, const char* what) {
  if (handle.is_none()) return {};
  if (!PyCapsule_IsValid(handle.ptr(), HPCOLLS_COMM_CAPSULE))
    throw py::type_error(std::string("solvers._kernels.") + what +
                         ": comm must be None or a capsule from hpcolls.c_api.comm_capsule() (" HPCOLLS_COMM_CAPSULE ")");
  HpcollsComm c;
  c.api = hpcolls_api();
  c.comm = static_cast<hpcolls_comm*>(PyCapsule_GetPointer(handle.ptr(), HPCOLLS_COMM_CAPSULE));
  if (c.api->nranks(c.comm) != nranks || c.api->device(c.comm) != device)
    throw std::invalid_argument(std::string("solvers._kernels.") + what + ": the hpcolls communicator has " +
                                std::to_string(c.api->nranks(c.comm)) + " ranks on GPU " +
                                std::to_string(c.api->device(c.comm)) + ", the call " + std::to_string(nranks) +
                                " ranks on GPU " + std::to_string(device));
  return c;
}

// hpcolls' failure as hpcolls' own exception (its public names), so callers catch one class.
[[noreturn]] void raise_as_hpcolls(const HpcollsCallError& e) {
  const char* name = e.status == HPCOLLS_TIMEOUT      ? "CollectiveTimeout"
                     : e.status == HPCOLLS_BROKEN     ? "CommunicatorBroken"
                     : e.status == HPCOLLS_CUDA_ERROR ? "CudaError"
                                                      : nullptr;
  py::object cls = name != nullptr ? py::module_::import("hpcolls").attr(name)
                                   : py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
  PyErr_SetString(cls.ptr(), e.what());
  throw py::error_already_set();
}

}  // namespace

PYBIND11_MODULE(_kernels, m) {
  m.doc() = "the solver's GPU kernels (statically linked CUDA runtime; hpcolls through its C entry)";
  py::register_exception<NoDeviceError>(m, "NoDeviceError", PyExc_RuntimeError);
  py::register_exception<CudaError>(m, "CudaError", PyExc_RuntimeError);
  m.attr("CUDART_VERSION_BUILT") = CUDART_VERSION;
  m.attr("HPCOLLS_C_API_VERSION_BUILT") = HPCOLLS_C_API_VERSION;
  py::dict dtypes;  // numpy name -> the code every function here takes (hpcolls' numbering)
  dtypes["float32"] = int(ScalarType::F32);
  dtypes["float64"] = int(ScalarType::F64);
  dtypes["complex64"] = int(ScalarType::C64);
  dtypes["complex128"] = int(ScalarType::C128);
  m.attr("DTYPES") = dtypes;

  // The tridiagonalization's column loop, one call per panel (sytrd_panel.h).
  m.attr("SYTRD_MAX_WIDTH") = kSytrdMaxWidth;
  m.attr("SYTRD_PRODUCTS") = py::make_tuple("gemv", "hemv_lower");  // SytrdProduct's values, in order
  m.attr("SYTRD_PHASES") = py::make_tuple("column", "reflector", "product", "allreduce", "correction", "w");
  m.def(
      "sytrd_work_bytes",
      [](int64_t n, int64_t width, int dtype, int product) {
        return sytrd_work_bytes(n, width, static_cast<ScalarType>(dtype), static_cast<SytrdProduct>(product));
      },
      py::arg("n"), py::arg("width"), py::arg("dtype"), py::arg("product") = 0);
  using IndexArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  m.def(
      "sytrd_panel",
      [](int dtype, int device, int64_t n, int64_t j0, int64_t width, uintptr_t local, int64_t ld,
         const IndexArray& rows_host, const IndexArray& cols_host, uintptr_t rows_dev, uintptr_t cols_dev,
         uintptr_t panel, uintptr_t v_mat, uintptr_t w_mat, uintptr_t d, uintptr_t e, uintptr_t tau,
         uintptr_t work, uintptr_t p, uintptr_t stream, py::object comm, int nranks, py::object fallback,
         int product, std::optional<py::array_t<double, py::array::c_style>> phase_ms, int fused_blocks) {
        const HpcollsComm entry = comm_from(comm, device, nranks, "sytrd_panel");
        require_device("sytrd_panel");
        if (phase_ms && phase_ms->size() != kSytrdPhases)
          throw std::invalid_argument("solvers: sytrd_panel phase_ms needs one entry per SYTRD_PHASES");
        SytrdPanel s{};
        s.n = n;
        s.j0 = j0;
        s.width = width;
        s.local = reinterpret_cast<void*>(local);
        s.ld = ld;
        s.nloc_rows = rows_host.size();
        s.nloc_cols = cols_host.size();
        s.rows_host = rows_host.data();
        s.cols_host = cols_host.data();
        s.rows_dev = reinterpret_cast<const int64_t*>(rows_dev);
        s.cols_dev = reinterpret_cast<const int64_t*>(cols_dev);
        s.panel = reinterpret_cast<void*>(panel);
        s.v_mat = reinterpret_cast<void*>(v_mat);
        s.w_mat = reinterpret_cast<void*>(w_mat);
        s.d = reinterpret_cast<void*>(d);
        s.e = reinterpret_cast<void*>(e);
        s.tau = reinterpret_cast<void*>(tau);
        s.work = reinterpret_cast<void*>(work);
        s.p = reinterpret_cast<void*>(p);
        s.stream = reinterpret_cast<cudaStream_t>(stream);
        s.product = product;
        s.phase_ms = phase_ms ? phase_ms->mutable_data() : nullptr;
        s.fused_blocks = fused_blocks;
        cuda_check(cudaSetDevice(device), "cudaSetDevice");
        const std::function<void(int64_t)> call_fallback = [&fallback](int64_t count) {
          if (fallback.is_none()) throw std::logic_error("solvers: sytrd_panel needs a fallback AllReduce");
          fallback(count);
        };
        try {
          const SytrdCollStats st = sytrd_panel(s, static_cast<ScalarType>(dtype), entry, nranks, call_fallback);
          return py::make_tuple(st.calls, st.bytes, st.seconds, st.launches);
        } catch (const HpcollsCallError& err) {
          raise_as_hpcolls(err);
        }
      },
      py::arg("dtype"), py::arg("device"), py::arg("n"), py::arg("j0"), py::arg("width"), py::arg("local"),
      py::arg("ld"), py::arg("rows_host"), py::arg("cols_host"), py::arg("rows_dev"), py::arg("cols_dev"),
      py::arg("panel"), py::arg("v_mat"), py::arg("w_mat"), py::arg("d"), py::arg("e"), py::arg("tau"),
      py::arg("work"), py::arg("p"), py::arg("stream"), py::arg("comm").none(true), py::arg("nranks"),
      py::arg("fallback").none(true), py::arg("product") = 0, py::arg("phase_ms") = py::none(),
      py::arg("fused_blocks") = 0);

  // The fused column loop (sytrd_fused.h), decided once per reduction: (blocks, "") where it can
  // run panels of at most `width` columns, else (0, why not). Not yet run on a GPU.
  m.def(
      "sytrd_fused_plan",
      [](py::object comm, int device, int nranks, int64_t n, int64_t width, int dtype, int ranks_on_gpu) {
        const HpcollsComm entry = comm_from(comm, device, nranks, "sytrd_fused_plan");
        require_device("sytrd_fused_plan");
        cuda_check(cudaSetDevice(device), "cudaSetDevice");
        const SytrdFusedPlan plan = sytrd_fused_plan(entry, n, width, static_cast<ScalarType>(dtype), ranks_on_gpu);
        return py::make_tuple(plan.blocks, plan.refused);
      },
      py::arg("comm").none(true), py::arg("device"), py::arg("nranks"), py::arg("n"), py::arg("width"),
      py::arg("dtype"), py::arg("ranks_on_gpu"));
  // Raises hpcolls' CollectiveTimeout where a fused panel's in-kernel AllReduce timed out (its
  // record, read by the C entry's device_comm), once the caller has synchronized the stream.
  m.def(
      "sytrd_fused_check",
      [](py::object comm, int device, int nranks) {
        if (comm.is_none()) throw py::type_error("solvers._kernels.sytrd_fused_check: comm is None");
        const HpcollsComm entry = comm_from(comm, device, nranks, "sytrd_fused_check");
        try {
          (void)entry.device_comm();
        } catch (const HpcollsCallError& err) {
          raise_as_hpcolls(err);
        }
      },
      py::arg("comm"), py::arg("device"), py::arg("nranks"));

  // The column AllReduce on its own, as sytrd_panel issues it (for its tests): True when hpcolls'
  // native path launched it, False when the message is not one it takes (nothing launched).
  m.def(
      "column_allreduce",
      [](py::object comm, int device, int nranks, uintptr_t p, size_t count, int dtype, uintptr_t stream) {
        if (comm.is_none()) throw py::type_error("solvers._kernels.column_allreduce: comm is None");
        const HpcollsComm entry = comm_from(comm, device, nranks, "column_allreduce");
        require_device("column_allreduce");
        try {
          return entry.allreduce_sum(reinterpret_cast<void*>(p), count, dtype, reinterpret_cast<cudaStream_t>(stream));
        } catch (const HpcollsCallError& err) {
          raise_as_hpcolls(err);
        }
      },
      py::arg("comm"), py::arg("device"), py::arg("nranks"), py::arg("p"), py::arg("count"), py::arg("dtype"),
      py::arg("stream"));

  // The bulge chasing of sb2st / hb2st (sb2st.h), on the host and on the GPU.
  auto chase_args = [](int64_t n, int band, uintptr_t work, uintptr_t v, uintptr_t tau, uintptr_t index,
                       int64_t kmax, int group, int height) {
    Sb2stArgs a{};
    a.n = n;
    a.b = band;
    a.band = reinterpret_cast<void*>(work);
    a.v = reinterpret_cast<void*>(v);
    a.tau = reinterpret_cast<void*>(tau);
    a.index = reinterpret_cast<const int64_t*>(index);
    a.kmax = kmax;
    a.group = group;
    a.height = height;
    return a;
  };
  m.def(
      "sb2st_host",
      [chase_args](int dtype, int64_t n, int band, uintptr_t work, uintptr_t v, uintptr_t tau, uintptr_t index,
                   int64_t kmax, int group, int height, int threads, int block_threads) {
        const Sb2stArgs a = chase_args(n, band, work, v, tau, index, kmax, group, height);
        py::gil_scoped_release released;
        sb2st_host(a, static_cast<ScalarType>(dtype), threads, block_threads);
      },
      py::arg("dtype"), py::arg("n"), py::arg("band"), py::arg("work"), py::arg("v"), py::arg("tau"),
      py::arg("index"), py::arg("kmax"), py::arg("group"), py::arg("height"), py::arg("threads"),
      py::arg("block_threads") = 1);
  m.def("sb2st_shared_bytes", [](int band, int dtype) { return sb2st_shared_bytes(band, static_cast<ScalarType>(dtype)); },
        py::arg("band"), py::arg("dtype"));
  m.def("sb2st_device_work_bytes", &sb2st_device_work_bytes, py::arg("n"));
  m.def(
      "sb2st_device_fits",
      [](int band, int dtype, int device) {
        require_device("sb2st_device_fits");
        return sb2st_device_fits(band, static_cast<ScalarType>(dtype), device);
      },
      py::arg("band"), py::arg("dtype"), py::arg("device"));
  m.def(
      "sb2st_device",
      [chase_args](int dtype, int device, int64_t n, int band, uintptr_t work, uintptr_t v, uintptr_t tau,
                   uintptr_t index, int64_t kmax, int group, int height, uintptr_t scratch, uintptr_t stream,
                   int threads_per_block, int workers, double timeout_s) {
        require_device("sb2st_device");
        const Sb2stArgs a = chase_args(n, band, work, v, tau, index, kmax, group, height);
        py::gil_scoped_release released;
        sb2st_device(a, static_cast<ScalarType>(dtype), device, reinterpret_cast<void*>(scratch),
                     reinterpret_cast<cudaStream_t>(stream), threads_per_block, workers, timeout_s);
      },
      py::arg("dtype"), py::arg("device"), py::arg("n"), py::arg("band"), py::arg("work"), py::arg("v"),
      py::arg("tau"), py::arg("index"), py::arg("kmax"), py::arg("group"), py::arg("height"), py::arg("scratch"),
      py::arg("stream"), py::arg("threads_per_block") = 128, py::arg("workers") = 0, py::arg("timeout_s") = 10.0);

  // Selected eigenpairs of a tridiagonal by multisection and inverse iteration (stein.h): every
  // pointer is host memory for the *_host functions and device memory for the *_device ones.
  auto tridiagonal = [](uintptr_t d, uintptr_t e, uintptr_t e2, int64_t n) {
    if (n < 1) throw std::invalid_argument("solvers: stein needs a tridiagonal of order >= 1");
    return Tridiagonal{reinterpret_cast<const double*>(d), reinterpret_cast<const double*>(e),
                       reinterpret_cast<const double*>(e2), n};
  };
  auto inverse_work = [](uintptr_t a, uintptr_t r, uintptr_t b, uintptr_t u2, uintptr_t l, uintptr_t swap,
                         uintptr_t y, int64_t count) {
    return InverseIterationWork{reinterpret_cast<double*>(a), reinterpret_cast<double*>(r),
                                reinterpret_cast<double*>(b), reinterpret_cast<double*>(u2),
                                reinterpret_cast<double*>(l), reinterpret_cast<double*>(y),
                                reinterpret_cast<uint8_t*>(swap), count};
  };
  m.def(
      "stein_eigenvalues",
      [tridiagonal](uintptr_t d, uintptr_t e2, int64_t n, double lower, double upper, double pivmin, double abstol,
                    int64_t first, int64_t count, uintptr_t w, int device, uintptr_t stream, int threads) {
        const Tridiagonal t = tridiagonal(d, 0, e2, n);
        const BisectionBounds bounds{lower, upper, pivmin, abstol};
        if (first < 1 || count < 0 || first + count - 1 > n)
          throw std::invalid_argument("solvers: stein_eigenvalues: eigenvalues " + std::to_string(first) + ".." +
                                      std::to_string(first + count - 1) + " of an order " + std::to_string(n));
        if (device < 0) {
          py::gil_scoped_release released;
          stein_eigenvalues_host(t, bounds, first, count, reinterpret_cast<double*>(w), threads);
          return;
        }
        require_device("stein_eigenvalues");
        cuda_check(cudaSetDevice(device), "cudaSetDevice");
        stein_eigenvalues_device(t, bounds, first, count, reinterpret_cast<double*>(w),
                                 reinterpret_cast<cudaStream_t>(stream));
      },
      py::arg("d"), py::arg("e2"), py::arg("n"), py::arg("lower"), py::arg("upper"), py::arg("pivmin"),
      py::arg("abstol"), py::arg("first"), py::arg("count"), py::arg("w"), py::arg("device") = -1,
      py::arg("stream") = 0, py::arg("threads") = 1);
  m.def(
      "stein_vectors",
      [tridiagonal, inverse_work](uintptr_t d, uintptr_t e, int64_t n, uintptr_t w, double onenrm,
                                  int64_t first_vector, int64_t count, uintptr_t a, uintptr_t r, uintptr_t b,
                                  uintptr_t u2, uintptr_t l, uintptr_t swap, uintptr_t y, uintptr_t iterations,
                                  int device, uintptr_t stream, int threads) {
        const Tridiagonal t = tridiagonal(d, e, 0, n);
        const InverseIterationWork work = inverse_work(a, r, b, u2, l, swap, y, count);
        auto* its = reinterpret_cast<int32_t*>(iterations);
        if (device < 0) {
          py::gil_scoped_release released;
          stein_vectors_host(t, reinterpret_cast<const double*>(w), onenrm, first_vector, work, its, threads);
          return;
        }
        require_device("stein_vectors");
        cuda_check(cudaSetDevice(device), "cudaSetDevice");
        stein_vectors_device(t, reinterpret_cast<const double*>(w), onenrm, first_vector, work, its,
                             reinterpret_cast<cudaStream_t>(stream));
      },
      py::arg("d"), py::arg("e"), py::arg("n"), py::arg("w"), py::arg("onenrm"), py::arg("first_vector"),
      py::arg("count"), py::arg("a"), py::arg("r"), py::arg("b"), py::arg("u2"), py::arg("l"), py::arg("swap"), py::arg("y"),
      py::arg("iterations"), py::arg("device") = -1, py::arg("stream") = 0, py::arg("threads") = 1);

  // The w x w part of sy2sb's panel QR (panel_factors.h): host memory with device < 0, else the
  // device's, on `stream`.
  m.def("panel_factors_scratch_elems", &panel_factors_scratch_elems, py::arg("w"));
  m.def(
      "panel_factors",
      [](int dtype, int w, uintptr_t gram, uintptr_t q1_top, uintptr_t l1, uintptr_t out, uintptr_t scratch,
         uintptr_t status, double orthogonality_limit, int device, uintptr_t stream) {
        const PanelFactorsArgs a{w, reinterpret_cast<const void*>(gram), reinterpret_cast<const void*>(q1_top),
                                 reinterpret_cast<const void*>(l1), reinterpret_cast<void*>(out),
                                 reinterpret_cast<void*>(scratch), reinterpret_cast<int32_t*>(status)};
        if (device < 0) {
          py::gil_scoped_release released;
          panel_factors_host(static_cast<ScalarType>(dtype), a, orthogonality_limit);
          return;
        }
        require_device("panel_factors");
        panel_factors_device(static_cast<ScalarType>(dtype), a, orthogonality_limit, device,
                             reinterpret_cast<cudaStream_t>(stream));
      },
      py::arg("dtype"), py::arg("w"), py::arg("gram"), py::arg("q1_top"), py::arg("l1"), py::arg("out"),
      py::arg("scratch"), py::arg("status"), py::arg("orthogonality_limit"), py::arg("device") = -1,
      py::arg("stream") = 0);

  // sy2sb's panel QR by CholeskyQR2 in one call on the GPU (panel_cholqr2.h), and its first
  // pass's w x w part alone: host memory with device < 0 (the same steps, for the CPU tests).
  m.attr("PANEL_CHOLQR2_MAX_WIDTH") = kPanelCholqr2MaxWidth;
  m.def("panel_cholqr2_scratch_elems", &panel_cholqr2_scratch_elems, py::arg("m"), py::arg("w"));
  m.def(
      "panel_first_factor",
      [](int dtype, int w, uintptr_t gram, uintptr_t l1, uintptr_t r1_inverse, uintptr_t status, int device,
         uintptr_t stream) {
        const FirstFactorArgs a{w, reinterpret_cast<const void*>(gram), reinterpret_cast<void*>(l1),
                                reinterpret_cast<void*>(r1_inverse), reinterpret_cast<int32_t*>(status)};
        if (device < 0) {
          py::gil_scoped_release released;
          panel_first_factor_host(static_cast<ScalarType>(dtype), a);
          return;
        }
        require_device("panel_first_factor");
        panel_first_factor_device(static_cast<ScalarType>(dtype), a, device, reinterpret_cast<cudaStream_t>(stream));
      },
      py::arg("dtype"), py::arg("w"), py::arg("gram"), py::arg("l1"), py::arg("r1_inverse"), py::arg("status"),
      py::arg("device") = -1, py::arg("stream") = 0);
  m.def(
      "panel_cholqr2",
      [](int dtype, int64_t m, int w, uintptr_t a, int64_t lda, uintptr_t v, uintptr_t out, uintptr_t scratch,
         uintptr_t status, double orthogonality_limit, int device, uintptr_t stream) {
        const PanelCholqr2Args args{m, w, reinterpret_cast<const void*>(a), lda, reinterpret_cast<void*>(v),
                                    reinterpret_cast<void*>(out), reinterpret_cast<void*>(scratch),
                                    reinterpret_cast<int32_t*>(status)};
        if (device < 0) {
          py::gil_scoped_release released;
          panel_cholqr2_host(static_cast<ScalarType>(dtype), args, orthogonality_limit);
          return;
        }
        require_device("panel_cholqr2");
        panel_cholqr2_device(static_cast<ScalarType>(dtype), args, orthogonality_limit, device,
                             reinterpret_cast<cudaStream_t>(stream));
      },
      py::arg("dtype"), py::arg("m"), py::arg("w"), py::arg("a"), py::arg("lda"), py::arg("v"), py::arg("out"),
      py::arg("scratch"), py::arg("status"), py::arg("orthogonality_limit"), py::arg("device") = -1,
      py::arg("stream") = 0);

  // Q2's back-transformation over a run of slots (ormtr_sb2st.h), on `stream`.
  m.attr("ORMTR_SB2ST_GROUP") = kOrmtrSb2stGroup;
  m.def("ormtr_sb2st_device_supports",
        [](int dtype, int band, int group) {
          return ormtr_sb2st_device_supports(static_cast<ScalarType>(dtype), band, group);
        },
        py::arg("dtype"), py::arg("band"), py::arg("group"));
  m.def(
      "ormtr_sb2st_device",
      [](int dtype, int device, uintptr_t y, int64_t ld, int64_t ncols, uintptr_t v, int64_t v_base, uintptr_t vt,
         int64_t vt_base, IndexArray slot_start, IndexArray slot_row, int64_t first_slot, int64_t end_slot, int band,
         int group, uintptr_t stream) {
        if (first_slot < 0 || end_slot > slot_row.size() || end_slot >= slot_start.size())
          throw std::invalid_argument("solvers._kernels.ormtr_sb2st_device: slots " + std::to_string(first_slot) +
                                      " … " + std::to_string(end_slot) + " outside the " +
                                      std::to_string(slot_row.size()) + " slots given");
        require_device("ormtr_sb2st_device");
        const OrmtrSb2stArgs a{reinterpret_cast<void*>(y), ld, ncols, reinterpret_cast<const void*>(v),
                               reinterpret_cast<const void*>(vt), v_base, vt_base, slot_start.data(), slot_row.data(),
                               first_slot, end_slot, band, group};
        ormtr_sb2st_device(static_cast<ScalarType>(dtype), a, device, reinterpret_cast<cudaStream_t>(stream));
      },
      py::arg("dtype"), py::arg("device"), py::arg("y"), py::arg("ld"), py::arg("ncols"), py::arg("v"),
      py::arg("v_base"), py::arg("vt"), py::arg("vt_base"), py::arg("slot_start"), py::arg("slot_row"),
      py::arg("first_slot"), py::arg("end_slot"), py::arg("band"), py::arg("group"), py::arg("stream"));

  // The one-rank local product on its own (hemv_lower.h), for its tests and benchmark.
  m.def("hemv_lower_work_elems", &hemv_lower_work_elems, py::arg("m"));
  m.def(
      "hemv_lower",
      [](int dtype, int device, int64_t m, uintptr_t a, int64_t ld, uintptr_t x, uintptr_t y, uintptr_t work,
         uintptr_t stream) {
        require_device("hemv_lower");
        cuda_check(cudaSetDevice(device), "cudaSetDevice");
        hemv_lower(static_cast<ScalarType>(dtype), reinterpret_cast<const void*>(a), ld, m,
                   reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y), reinterpret_cast<void*>(work),
                   reinterpret_cast<cudaStream_t>(stream));
      },
      py::arg("dtype"), py::arg("device"), py::arg("m"), py::arg("a"), py::arg("ld"), py::arg("x"), py::arg("y"),
      py::arg("work"), py::arg("stream"));
}
