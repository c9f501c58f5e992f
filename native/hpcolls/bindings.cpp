// Python bindings: hpcolls._native. One call per collective; arguments are plain integers so
// the conversion cost stays small (the Python layer has already resolved buffers and types).
#include <algorithm>
#include <climits>
#include <cstddef>
#include <optional>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "hpcolls/c_api_module.h"
#include "hpcolls/diagnostics.h"
#include "hpcolls/errors.h"
#include "hpcolls/fast_entry.h"
#include "hpcolls/host_call.h"
#include "hpcolls/native_comm.h"
#include "hpcolls/plan.h"
#include "hpcolls/runtime_info.h"

namespace py = pybind11;
using namespace hpcolls;

#ifndef HPCOLLS_VERSION
#define HPCOLLS_VERSION "0.1.0"
#endif

namespace {

// A selection row as Python sees it (config.py, info, tuned tables): a dict of collective (its
// name), max_ranks and the byte limits (None: no limit).
constexpr const char* kRowLimits[] = {"ll_max", "ll128_max", "ll_oneshot_max", "sentinel_oneshot_max",
                                      "native_max_vs_nccl"};
constexpr int kRowLimitCount = int(sizeof(kRowLimits) / sizeof(kRowLimits[0]));
size_t* row_limit(SelectionRow& r, int i) {
  size_t* fields[kRowLimitCount] = {&r.ll_max, &r.ll128_max, &r.ll_oneshot_max, &r.sentinel_oneshot_max, &r.native_max_vs_nccl};
  return fields[i];
}

py::dict row_dict(SelectionRow r) {
  py::dict d;
  d["collective"] = collective_name(r.collective);
  d["max_ranks"] = r.max_ranks;
  for (int i = 0; i < kRowLimitCount; ++i) {
    const size_t b = *row_limit(r, i);
    d[kRowLimits[i]] = b == SIZE_MAX ? py::object(py::none()) : py::object(py::int_(b));
  }
  return d;
}

py::list rows_list(const SelectionRow* rows, size_t n) {
  py::list out;
  for (size_t i = 0; i < n; ++i) out.append(row_dict(rows[i]));
  return out;
}

// Rows from Python, checked field by field here and as a table by selection_rows_problem (plan.h):
// anything wrong is a ValueError naming the row and the field, never a row the plan misreads.
std::vector<SelectionRow> rows_from(const py::object& given) {
  std::vector<SelectionRow> rows;
  if (given.is_none()) return rows;
  size_t i = 0;
  for (const py::handle item : given) {
    const std::string where = "hpcolls: selection row " + std::to_string(i++) + ": ";
    if (!py::isinstance<py::dict>(item)) throw py::value_error(where + "not a dict");
    const auto d = py::reinterpret_borrow<py::dict>(item);
    for (const auto& kv : d) {
      const std::string key = py::str(kv.first);
      bool known = key == "collective" || key == "max_ranks";
      for (const char* name : kRowLimits) known = known || key == name;
      if (!known) throw py::value_error(where + "unknown field '" + key + "'");
    }
    const auto field = [&](const char* name) {
      if (!d.contains(name)) throw py::value_error(where + "field '" + name + "' missing");
      return d[name];
    };
    const auto whole = [&](const char* name, py::handle v) -> long long {
      if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v))
        throw py::value_error(where + "'" + name + "' is not an integer");
      long long x = 0;
      try {
        x = v.cast<long long>();
      } catch (const py::cast_error&) {
        throw py::value_error(where + "'" + name + "' is out of range");
      }
      if (x < 0) throw py::value_error(where + "'" + name + "' is negative (" + std::to_string(x) + ")");
      return x;
    };
    SelectionRow r{};
    const py::object coll = field("collective");
    r.collective = Collective::kCount;
    for (int c = 0; c < int(Collective::kCount); ++c)
      if (py::isinstance<py::str>(coll) && coll.cast<std::string>() == collective_name(Collective(c)))
        r.collective = Collective(c);
    if (r.collective == Collective::kCount)
      throw py::value_error(where + "'collective' " + std::string(py::repr(coll)) + " is not one of the plan's");
    const long long max_ranks = whole("max_ranks", field("max_ranks"));
    r.max_ranks = int(std::min<long long>(max_ranks, INT32_MAX));
    for (int f = 0; f < kRowLimitCount; ++f) {
      const py::object v = field(kRowLimits[f]);
      *row_limit(r, f) = v.is_none() ? SIZE_MAX : size_t(whole(kRowLimits[f], v));
    }
    rows.push_back(r);
  }
  const std::string problem = selection_rows_problem(rows);
  if (!problem.empty()) throw py::value_error("hpcolls: selection " + problem);
  return rows;
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "hpcolls native CUDA collectives (statically linked CUDA runtime)";
  py::register_exception<NoDeviceError>(m, "NoDeviceError", PyExc_RuntimeError);
  py::register_exception<CudaError>(m, "CudaError", PyExc_RuntimeError);
  py::register_exception<CollectiveTimeout>(m, "CollectiveTimeout", PyExc_RuntimeError);
  py::register_exception<CommunicatorBroken>(m, "CommunicatorBroken", PyExc_RuntimeError);
  bind_fast_entries(m);
  bind_c_api(m);
  bind_host_calls(m);

  m.attr("CUDART_VERSION_BUILT") = CUDART_VERSION;
  m.attr("MAX_RANKS") = kMaxRanks;
  // The device API's struct (hpcolls/device/comm.h) as hpcolls/device_api.py reads the bytes
  // NativeComm.device_comm() returns: its size, each field's (offset, bytes), and each operation's
  // size limit, computed by the header's own functions (one rule, on host and device).
  m.attr("DEVICE_API_VERSION") = HPCOLLS_DEVICE_API_VERSION;
  m.attr("DEVICE_COMM_BYTES") = sizeof(hpcolls_device_comm_t);
  {
    using D = hpcolls_device_comm_t;
    py::dict layout;
#define HPCOLLS_FIELD(name) layout[#name] = py::make_tuple(offsetof(D, name), sizeof(D::name))
    HPCOLLS_FIELD(scratch);
    HPCOLLS_FIELD(counters);
    HPCOLLS_FIELD(host_error);
    HPCOLLS_FIELD(half_bytes);
    HPCOLLS_FIELD(timeout_ns);
    HPCOLLS_FIELD(rank);
    HPCOLLS_FIELD(nranks);
#undef HPCOLLS_FIELD
    m.attr("DEVICE_COMM_LAYOUT") = layout;
  }
  m.def(
      "device_max_bytes",
      [](uint64_t half_bytes, int nranks) {
        hpcolls_device_comm_t c{};
        c.half_bytes = half_bytes;
        c.nranks = nranks;
        py::dict d;
        d["allreduce"] = hpcolls_device_allreduce_max_bytes(&c);
        d["allgather"] = hpcolls_device_allgather_max_bytes(&c);
        d["broadcast"] = hpcolls_device_broadcast_max_bytes(&c);
        return d;
      },
      py::arg("half_bytes"), py::arg("nranks"),
      "{operation: the largest message per rank, in bytes, the device API carries} (hpcolls/device/comm.h)");
  py::list small_ranks;
  for (int n : kSmallOneShotRanks) small_ranks.append(n);
  m.attr("SMALL_ONESHOT_RANKS") = py::tuple(small_ranks);  // rank counts with a small-message kernel
  m.attr("SMALL_ONESHOT_BLOCK_BYTES") = kSmallOneShotBlockBytes;  // a block per this many bytes
  // How many kernel variants the plan chooses among (plan.h's Kernel list): part of the identity a
  // tuned selection table is stored under (hpcolls/tuned_table.py), so that a build with other
  // kernels does not read crossovers measured on these.
  m.attr("KERNEL_VARIANTS") = int(Kernel::kCount);
  m.def("device_count", &device_count, "CUDA devices visible (0 without driver or device; never raises)");
  m.def("no_device_reason", &no_device_reason);
  m.def("require_device", &require_device);
  m.def("runtime_version", &runtime_version);
  m.def("driver_version", &driver_version);
  m.def("device_info", [](int d) {
    const DeviceInfo i = device_info(d);
    py::dict r;
    r["index"] = i.index;
    r["name"] = i.name;
    r["pci_bus_id"] = i.pci_bus_id;
    r["uuid"] = i.uuid;
    r["sm_count"] = i.sm_count;
    r["total_memory"] = i.total_memory;
    r["compute_capability"] = py::make_tuple(i.cc_major, i.cc_minor);
    return r;
  });

  // Synchronous copy between any two addresses (host or device) ordered on `stream`: the MPI
  // fallback stages device buffers through host memory with it when MPI is not CUDA-aware.
  m.def(
      "memcpy",
      [](uintptr_t dst, uintptr_t src, size_t bytes, uintptr_t stream) {
        auto s = reinterpret_cast<cudaStream_t>(stream);
        cuda_check(cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes,
                                   cudaMemcpyDefault, s),
                   "cudaMemcpyAsync");
        cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      },
      py::call_guard<py::gil_scoped_release>());
  // The same copy without waiting: ordered on `stream`, capturable into a CUDA graph.
  m.def("memcpy_async", [](uintptr_t dst, uintptr_t src, size_t bytes, uintptr_t stream) {
    cuda_check(cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes,
                               cudaMemcpyDefault, reinterpret_cast<cudaStream_t>(stream)),
               "cudaMemcpyAsync");
  });
  m.def(
      "stream_synchronize",
      [](uintptr_t stream) { cuda_check(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)), "cudaStreamSynchronize"); },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "device_synchronize", [] { cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); },
      py::call_guard<py::gil_scoped_release>());
  // The driver context this module's runtime uses, as an integer (to compare with cupy's).
  m.def("current_context", [] {
    cudaStream_t s = nullptr;
    (void)s;
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 4000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return uintptr_t(0);
    void* ctx = nullptr;
    reinterpret_cast<int (*)(void**)>(fn)(&ctx);
    return reinterpret_cast<uintptr_t>(ctx);
  });
  // Where a pointer lives: (is_device_memory, device ordinal or -1).
  m.def("pointer_device", [](uintptr_t p) -> py::tuple {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, reinterpret_cast<const void*>(p)) != cudaSuccess) {
      (void)cudaGetLastError();
      return py::make_tuple(false, -1);
    }
    const bool dev = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
    return py::make_tuple(dev, dev ? a.device : -1);
  });

  // Whether `stream` is being captured into a CUDA graph. Asking about the legacy default stream
  // while another stream captures in global mode is itself an error: that counts as capturing.
  m.def(
      "stream_is_capturing",
      [](uintptr_t stream) {
        cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
        const cudaError_t e = cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(stream), &c);
        if (e == cudaErrorStreamCaptureImplicit) {
          (void)cudaGetLastError();
          return true;
        }
        cuda_check(e, "cudaStreamIsCapturing");
        return c != cudaStreamCaptureStatusNone;
      },
      py::arg("stream"));


  // plan() on its own (plan.h), a pure function: the selection's tests run without a GPU.
  static_assert(int(Collective::kCount) == 5, "COLLECTIVES below lists every Collective");
  m.def(
      "plan",
      [](size_t bytes, int dtype, int op, int nranks, size_t half_bytes, int max_blocks, bool gpu_shared,
         bool dependent_launch, int threads_override, int ll_mode, int algo, std::optional<size_t> oneshot_max_bytes,
         std::optional<size_t> twoshot_max_bytes, int collective, int protocol, size_t sentinel_half_bytes,
         size_t ll128_half_bytes, bool ll128_available, bool nccl_alternative, py::object selection_rows) {
        PlanInputs in;
        in.rows = rows_from(selection_rows);
        in.nranks = nranks;
        in.half_bytes = half_bytes;
        in.max_blocks = max_blocks;
        in.gpu_shared = gpu_shared;
        in.dependent_launch = dependent_launch;
        in.threads_override = threads_override;
        in.ll_mode = ll_mode;
        in.mode = static_cast<AlgoMode>(algo);
        in.oneshot_max_bytes = oneshot_max_bytes;
        in.twoshot_max_bytes = twoshot_max_bytes;
        in.protocol = static_cast<ProtocolMode>(protocol);
        in.sentinel_half_bytes = sentinel_half_bytes;
        in.ll128_half_bytes = ll128_half_bytes;
        in.ll128_available = ll128_available;
        in.nccl_alternative = nccl_alternative;
        if (nranks < 1 || nranks > kMaxRanks || max_blocks < 1 || dtype < 0 || dtype >= int(DType::kCount) || op < 0 ||
            op >= int(Op::kCount) || algo < -1 || algo > 1 || collective < 0 || collective >= int(Collective::kCount) ||
            protocol < -1 || protocol >= kProtocols)
          throw std::invalid_argument("hpcolls: plan: an input out of range");
        const auto what = static_cast<Collective>(collective);
        const Plan p = plan(in, what, bytes, static_cast<DType>(dtype), static_cast<Op>(op));
        return py::make_tuple(kernel_name(p.kernel), p.blocks, p.threads, p.dependent_launch, p.piece_bytes, p.pieces,
                              largest_message(in, what), small_oneshot_max_bytes(in), protocol_name(p.protocol));
      },
      py::arg("bytes"), py::arg("dtype"), py::arg("op"), py::arg("nranks"), py::arg("half_bytes"),
      py::arg("max_blocks"), py::arg("gpu_shared") = false, py::arg("dependent_launch") = false,
      py::arg("threads_override") = 0, py::arg("ll_mode") = 0, py::arg("algo") = -1,
      py::arg("oneshot_max_bytes") = py::none(), py::arg("twoshot_max_bytes") = py::none(),
      py::arg("collective") = 0, py::arg("protocol") = -1, py::arg("sentinel_half_bytes") = 0,
      py::arg("ll128_half_bytes") = 0, py::arg("ll128_available") = false, py::arg("nccl_alternative") = false,
      py::arg("selection_rows") = py::none(),
      "(kernel, blocks, threads, dependent_launch, piece_bytes, pieces, largest_message, "
      "small_oneshot_max_bytes, protocol) of a call under these inputs (plan.h; collective: COLLECTIVES' index; "
      "protocol: -1 auto or PROTOCOLS' index; the one-shot and two-shot limits: None for the selection table's; "
      "selection_rows: a communicator's own rows as selection_table gives them, None: the built-in table)");
  m.attr("COLLECTIVES") = py::make_tuple("allreduce", "allgather", "bcast", "reduce", "reduce_scatter");  // Collective's values, in order
  static_assert(kProtocols == 3, "PROTOCOLS below lists every Protocol");
  m.attr("PROTOCOLS") = py::make_tuple(protocol_name(Protocol::LL), protocol_name(Protocol::Sentinel),
                                       protocol_name(Protocol::LL128));  // Protocol's values, in order
  // The one selection table (plan.h, docs/ARCHITECTURE.md#protocol-selection), for config.py and info.
  m.def(
      "selection_table",
      [] {
        size_t n = 0;
        const SelectionRow* rows = selection_table(&n);
        return rows_list(rows, n);
      },
      "The plan's built-in selection table: a dict per row (collective, max_ranks, then byte limits; None: no "
      "limit), in the plan's order (native/hpcolls/plan.cpp)");

  // The torn-line probe's argument check (ll128_probe.h), on its own: no CUDA call, so the CPU tests
  // check what NativeComm.probe_ll128 refuses before it touches the GPU.
  m.def("ll128_probe_arguments_error", &ll128_probe_arguments_error, py::arg("nranks"), py::arg("area_bytes"),
        py::arg("rank"), py::arg("write_s"), py::arg("wait_s"),
        "why the LL128 probe would refuse these arguments ('' when it would run)");
  m.def("ll128_probe_lines_per_pair", &ll128_probe_lines_per_pair, py::arg("area_bytes"), py::arg("nranks"));
  m.attr("LL128_PROBE_MAX_LINES") = kLL128ProbeMaxLines;
  m.def(
      "check_selection_rows", [](py::object rows) { rows_from(rows); }, py::arg("rows"),
      "Raises ValueError, naming the row and field, where `rows` (dicts as selection_table gives them) cannot be "
      "a communicator's own selection rows (plan.h: selection_rows_problem)");

  py::class_<NativeComm>(m, "NativeComm")
      .def(py::init<int, int, int, size_t, double, int, size_t, size_t>(), py::arg("rank"), py::arg("nranks"),
           py::arg("device"), py::arg("scratch_bytes"), py::arg("timeout_s"), py::arg("ranks_on_device"),
           py::arg("sentinel_bytes") = 0, py::arg("ll128_bytes") = 0)
      .def("capsule", [](py::object self) { return comm_capsule(self); },
           "a handle for hpcolls' C entry (hpcolls/c_api.h), keeping this object alive")
      .def("export_handle", [](const NativeComm& c) { return py::bytes(c.export_handle()); })
      .def("open_peers", [](NativeComm& c, const std::vector<py::bytes>& hs) {
        std::vector<std::string> v(hs.begin(), hs.end());
        c.open_peers(v);
      })
      .def("set_algo", [](NativeComm& c, int mode) { c.set_algo(static_cast<AlgoMode>(mode)); })
      .def("set_oneshot_max_bytes", &NativeComm::set_oneshot_max_bytes)
      .def("set_twoshot_max_bytes", &NativeComm::set_twoshot_max_bytes)
      .def("set_timeout", &NativeComm::set_timeout)
      .def("set_protocol", [](NativeComm& c, int p) { c.set_protocol(static_cast<ProtocolMode>(p)); },
           "-1: the selection table picks; else PROTOCOLS' index, forced where a kernel carries it")
      .def_property_readonly("protocol", [](const NativeComm& c) { return int(c.protocol()); })
      .def("set_ll128_available", &NativeComm::set_ll128_available)
      .def_property_readonly("ll128_available", &NativeComm::ll128_available)
      .def("ll128_probe_error", &NativeComm::ll128_probe_error, py::arg("write_s"), py::arg("wait_s"),
           py::arg("area_bytes"), "why probe_ll128 would refuse these arguments ('' when it would run); no CUDA call")
      .def(
          "probe_ll128",
          [](NativeComm& c, uint32_t tag, double write_s, double wait_s, size_t area_bytes) {
            // Arguments checked, with the GIL held, before any CUDA call. The GIL is released
            // around the probe alone (its kernel runs for write_s and more): no Python object is
            // touched without it; the report becomes a dict after it is taken back.
            const std::string bad = c.ll128_probe_error(write_s, wait_s, area_bytes);
            if (!bad.empty()) throw std::invalid_argument("hpcolls: LL128 probe: " + bad);
            LL128ProbeReport r;
            {
              py::gil_scoped_release unlocked;
              r = c.probe_ll128(tag, write_s, wait_s, area_bytes);
            }
            py::dict d;
            d["lines"] = r.lines;
            d["iterations"] = r.iterations;
            d["min_iterations"] = r.min_iterations;
            d["observed"] = r.observed;
            d["torn"] = r.torn;
            d["stale"] = r.stale;
            d["timed_out"] = r.timed_out;
            d["lines_per_pair"] = r.lines_per_pair;
            d["pairs"] = r.pairs;
            d["seconds"] = r.seconds;
            return d;
          },
          py::arg("tag"), py::arg("write_s"), py::arg("wait_s"), py::arg("area_bytes"),
          "LL128's torn-line probe over the first area_bytes of this communicator's LL128 region "
          "(native/include/hpcolls/ll128_probe.h): collective, the same tag and area_bytes on every rank, no call "
          "in flight on any rank. A dict of what this rank saw: "
          "lines, iterations, min_iterations, observed, torn, stale, timed_out, lines_per_pair, pairs, seconds")
      .def(
          "set_selection_rows", [](NativeComm& c, py::object rows) { c.set_selection_rows(rows_from(rows)); },
          py::arg("rows"),
          "This communicator's own selection rows (dicts as selection_table gives them; None or []: the built-in "
          "table's), checked: a ValueError names the row and field of a bad one")
      .def_property_readonly(
          "selection_rows", [](const NativeComm& c) { return rows_list(c.selection_rows().data(), c.selection_rows().size()); },
          "The communicator's own selection rows ([]: the built-in table is in force)")
      .def("set_nccl_alternative", &NativeComm::set_nccl_alternative)
      .def("region_bytes", [](const NativeComm& c, int p) {
        if (p < 0 || p >= kProtocols) throw std::invalid_argument("hpcolls: no protocol " + std::to_string(p));
        return c.region_bytes(static_cast<Protocol>(p));
      }, "bytes of PROTOCOLS[p]'s scratch region on this rank (0: absent, or some rank lacks it)")
      .def("set_ll_mode",
           [](NativeComm& c, int mode) {
             const bool diagnostic = mode > 0 && mode < kLLModes;  // others: set_ll_mode says what is wrong
             c.set_ll_mode(mode, diagnostic ? diagnostic_launchers(mode) : nullptr);
           })
      .def("set_threads_per_block", &NativeComm::set_threads_per_block)
      .def("set_dependent_launch", &NativeComm::set_dependent_launch)
      .def_property_readonly("dependent_launch", &NativeComm::dependent_launch)
      .def("max_bytes", [](const NativeComm& c, int algo) { return c.max_bytes(static_cast<Algo>(algo)); })
      .def("select", &NativeComm::select)
      .def(
          "plan",
          [](const NativeComm& c, size_t bytes, int dtype, int op, int collective) {
            if (collective < 0 || collective >= int(Collective::kCount))
              throw std::invalid_argument("hpcolls: plan: no collective " + std::to_string(collective));
            const Plan p = c.plan_of(static_cast<Collective>(collective), bytes, static_cast<DType>(dtype),
                                     static_cast<Op>(op));
            py::dict r;
            r["kernel"] = kernel_name(p.kernel);
            r["protocol"] = protocol_name(p.protocol);
            r["blocks"] = p.blocks;
            r["threads"] = p.threads;
            r["dependent_launch"] = p.dependent_launch;
            r["piece_bytes"] = p.piece_bytes;
            r["pieces"] = p.pieces;
            return r;
          },
          py::arg("bytes"), py::arg("dtype"), py::arg("op"), py::arg("collective") = 0,
          "How a call of `bytes` bytes of (dtype, op) would run (native/include/hpcolls/plan.h; collective: "
          "COLLECTIVES' index): kernel name ('' when none), grid, dependent launch, and the pieces (0: not "
          "native, 1: whole)")
      .def("largest_message", &NativeComm::largest_message)
      .def("kernel", &NativeComm::kernel)
      .def("allreduce",
           [](NativeComm& c, uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, uintptr_t stream) {
             return c.allreduce(send, recv, count, static_cast<DType>(dtype), static_cast<Op>(op), stream);
           })
      .def("allgather", &NativeComm::allgather, py::arg("send"), py::arg("recv"), py::arg("bytes"),
           py::arg("stride") = 0, py::arg("stream") = 0,
           "Allgather of `bytes` bytes per rank (any datatype): rank q's block lands at recv + q * stride "
           "(0: bytes); in place when send == recv + rank * stride. 0, or -1 when it does not fit (nothing "
           "launched): largest_allgather() is the largest block")
      .def("largest_allgather", [](const NativeComm& c) { return c.largest_allgather(); })
      .def("bcast", &NativeComm::bcast, py::arg("buf"), py::arg("bytes"), py::arg("root"), py::arg("stream") = 0,
           "Bcast of `bytes` bytes (any datatype) from rank `root`'s buf into every other rank's. 0, or -1 "
           "when it does not fit (nothing launched): largest_bcast() is the largest message")
      .def(
          "reduce",
          [](NativeComm& c, uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, int root,
             uintptr_t stream) {
            return c.reduce(send, recv, count, static_cast<DType>(dtype), static_cast<Op>(op), root, stream);
          },
          py::arg("send"), py::arg("recv"), py::arg("count"), py::arg("dtype"), py::arg("op"), py::arg("root"),
          py::arg("stream") = 0,
          "Reduce of `count` elements into rank `root`'s recv, combined in rank order (recv is not touched "
          "elsewhere); in place at the root when send == recv. 0, or -1 when it does not fit (nothing "
          "launched): largest_reduce() is the largest message in bytes")
      .def(
          "reduce_scatter",
          [](NativeComm& c, uintptr_t send, uintptr_t recv, const std::vector<size_t>& counts, int dtype, int op,
             uintptr_t stream, const std::vector<size_t>& displs) {
            return c.reduce_scatter(send, recv, counts, static_cast<DType>(dtype), static_cast<Op>(op), stream, displs);
          },
          py::arg("send"), py::arg("recv"), py::arg("counts"), py::arg("dtype"), py::arg("op"), py::arg("stream") = 0,
          py::arg("displs") = std::vector<size_t>{},
          "Reduce_scatter: rank q receives the rank-order reduction of block q (counts[q] elements at send + "
          "displs[q] elements; no displs: the blocks back to back); in place when send == recv (the input in "
          "recv, the result at its start). 0, or -1 when it does not fit (nothing launched): "
          "largest_reduce_scatter() is the largest block in bytes")
      .def(
          "reduce_scatter_block",
          [](NativeComm& c, uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, uintptr_t stream) {
            return c.reduce_scatter(send, recv, std::vector<size_t>(size_t(c.nranks()), count),
                                    static_cast<DType>(dtype), static_cast<Op>(op), stream);
          },
          py::arg("send"), py::arg("recv"), py::arg("count"), py::arg("dtype"), py::arg("op"), py::arg("stream") = 0,
          "Reduce_scatter_block: reduce_scatter with `count` elements for every rank")
      .def("largest_bcast", [](const NativeComm& c) { return c.largest(Collective::Bcast); })
      .def("largest_reduce", [](const NativeComm& c) { return c.largest(Collective::Reduce); })
      .def("largest_reduce_scatter", [](const NativeComm& c) { return c.largest(Collective::ReduceScatter); })
      .def("probe", &NativeComm::probe, py::call_guard<py::gil_scoped_release>())
      // Where rank r's scratch is mapped in this process (hpcolls._native_diag.peek/poke read it).
      .def("scratch_address", [](const NativeComm& c, int r) { return reinterpret_cast<uintptr_t>(c.scratch_base(r)); })
      .def_property_readonly(
          "error_record",
          [](const NativeComm& c) -> py::object {
            const ErrorRecord r = c.error_record();
            if (r.code == 0) return py::none();
            py::dict d;
            d["rank"] = r.rank;
            d["peer"] = r.peer;
            d["epoch"] = r.epoch;
            d["collective"] = collective_name(Collective(r.collective));
            return d;
          },
          "None, or the time-out a kernel recorded: {rank, peer it waited for, epoch, collective}")
      .def("check", &NativeComm::check)
      .def(
          "device_comm",
          [](NativeComm& c) {
            const hpcolls_device_comm_t d = c.device_comm();
            return py::bytes(reinterpret_cast<const char*>(&d), sizeof d);
          },
          "The device API's struct for this communicator on this rank (hpcolls/device/comm.h), as bytes "
          "(hpcolls/device_api.py reads them); raises as a collective would on a broken communicator")
      .def("synchronize", &NativeComm::synchronize, py::call_guard<py::gil_scoped_release>())
      .def("release", &NativeComm::release)
      .def_property_readonly("host_epoch", &NativeComm::host_epoch)
      .def_property_readonly("rank", &NativeComm::rank)
      .def_property_readonly("nranks", &NativeComm::nranks)
      .def_property_readonly("device", &NativeComm::device)
      .def_property_readonly("scratch_bytes", &NativeComm::scratch_bytes)
      .def_property_readonly("max_blocks", &NativeComm::max_blocks)
      .def_property_readonly("small_oneshot_max_bytes", &NativeComm::small_oneshot_max_bytes);
}
