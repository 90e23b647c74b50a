// Tier C's runner (whole_runner.hpp).
#include "graph/backends/cpu/whole/whole_runner.hpp"

#include <algorithm>
#include <array>
#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "core/array_fields.hpp"
#include "core/loaded_module.hpp"
#include "graph/backends/cpu/whole/timed_loop.hpp"
#include "graph/backends/cpu/whole/whole_arrays.hpp"
#include "graph/backends/cpu/whole/whole_blas.hpp"
#include "graph/rules/fp_state.hpp"

namespace py = pybind11;

namespace sot::graph::whole {

// The layout the generated code declares (whole_prelude.cpp: SotArr, SotSlot, SotEnv).
struct SlotArray {
  char* data;
  const long long* shape;
  const long long* strides;
  long long nd;
};
struct Undo {
  char* at;
  unsigned long long old;
  unsigned long size;
};
struct Env {
  int (*signals)();
  long long why;
  Undo* log;
  long long used, room;
  bool (*grow)(Env*);
  DdotFn ddot;
  char* chunk;
  long long arena_used, chunk_room, chunk_index;
  bool (*chunk_at)(Env*, long long k, long long bytes);
  DgemvFn dgemv;
  char* (*out_array)(Env*, long long k, const long long* shape);
  void* outs;  // (OutArrays)
  const NativeLoop* loops;
};
using WholeFn = int (*)(const unsigned long long* in, unsigned long long* out, Env* env);
static_assert(sizeof(Py_ssize_t) == sizeof(long long), "NumPy's npy_intp is 64 bits here");

namespace {

// A run's arrays made for a whole graph's results (out_array), by output.
struct OutArrays {
  const std::vector<py::object>* dtypes;  // per output: its dtype where it is handed out
  const std::vector<WType>* types;        // per output: its kind (the array's dimensions)
  PyObject* empty;                        // numpy.empty
  std::vector<py::object> made;
};

char* out_array(Env* env, long long k, const long long* shape) {
  auto* outs = static_cast<OutArrays*>(env->outs);
  const auto at = static_cast<std::size_t>(k);
  const int nd = (*outs->types)[at].ndim;
  PyObject* size = PyTuple_New(nd);
  for (int d = 0; size != nullptr && d < nd; ++d) {
    PyObject* n = PyLong_FromLongLong(shape[d]);
    if (n == nullptr) {
      Py_CLEAR(size);
      break;
    }
    PyTuple_SET_ITEM(size, d, n);
  }
  if (size == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* a = PyObject_CallFunctionObjArgs(outs->empty, size, (*outs->dtypes)[at].ptr(), nullptr);
  Py_DECREF(size);
  if (a == nullptr) {  // (the graph's own path makes it, or raises)
    PyErr_Clear();
    return nullptr;
  }
  outs->made[at] = py::reinterpret_steal<py::object>(a);
  return static_cast<char*>(array_fields(a)->data);
}

int check_signals() {
  return PyErr_CheckSignals();
}

// The undo log's storage: doubled when full, up to kUndoLimitBytes (then the function gives up).
constexpr long long kUndoLimitBytes = 256LL << 20;
thread_local std::vector<Undo> t_undo;

bool grow_log(Env* env) {
  const long long room = std::max<long long>(1024, 2 * env->room);
  if (room * static_cast<long long>(sizeof(Undo)) > kUndoLimitBytes) {
    return false;
  }
  t_undo.resize(static_cast<std::size_t>(room));
  env->log = t_undo.data();
  env->room = room;
  return true;
}

// The arena of the arrays the code makes: chunks kept between runs (a thread's own), each at least
// kChunkBytes, kArenaLimitBytes in all (past it the function gives up).
constexpr long long kChunkBytes = 1LL << 20;
constexpr long long kArenaLimitBytes = 1LL << 30;
struct Chunk {
  std::unique_ptr<char[]> data;
  long long size = 0;
};
thread_local std::vector<Chunk> t_chunks;

// Moves the arena to chunk `k` (made, or made larger while it holds nothing live, for `bytes`).
bool chunk_at(Env* env, long long k, long long bytes) {
  const auto at = static_cast<std::size_t>(k);
  if (at > t_chunks.size() || k < 0) {
    return false;
  }
  if (at == t_chunks.size() || t_chunks[at].size < bytes) {
    long long total = 0;
    for (std::size_t j = 0; j < t_chunks.size(); ++j) {
      total += j == at ? 0 : t_chunks[j].size;
    }
    const long long size = std::max(kChunkBytes, bytes);
    if (total + size > kArenaLimitBytes) {
      return false;
    }
    Chunk c;
    c.data.reset(new (std::nothrow) char[static_cast<std::size_t>(size) + 64]);
    if (!c.data) {
      return false;
    }
    c.size = size;
    if (at == t_chunks.size()) {
      t_chunks.push_back(std::move(c));
    } else {
      t_chunks[at] = std::move(c);
    }
  }
  char* base = t_chunks[at].data.get();
  const auto misalign = reinterpret_cast<std::uintptr_t>(base) % 64;
  env->chunk = base + (misalign == 0 ? 0 : 64 - misalign);
  env->chunk_room = t_chunks[at].size;
  env->chunk_index = k;
  env->arena_used = 0;
  return true;
}

// After a run: the chunks past the first few given back (a large step's arrays are not kept).
void trim_chunks() {
  constexpr std::size_t kKept = 4;
  if (t_chunks.size() > kKept) {
    t_chunks.resize(kKept);
  }
}

// The most dimensions of a NumPy array (NPY_MAXDIMS: 32 in NumPy 1.x, 64 in 2.x).
constexpr std::size_t kMostArrayDims = 64;

// The arrays' bytes at or under which a run copies them rather than logging each write.
constexpr long long kCopyLimitBytes = 16LL << 20;

// The bytes of the arrays a run writes, as they were before it (put back where it gives up).
thread_local std::vector<char> t_saved;

// Calls `at(pointer, bytes)` for each run of adjacent items of array `f` (items of `item` bytes),
// in C order of their indices: the whole array at once where it is C- or F-contiguous, else each
// row whose items are adjacent, else each item. Saving and putting back walk the same runs.
template <typename At>
void each_run(const ArrayFields* f, long long item, const At& at) {
  constexpr int kFContiguous = 0x0002;
  long long count = 1;
  for (int d = 0; d < f->nd; ++d) {
    count *= f->dimensions[d];
  }
  if (count == 0) {
    return;
  }
  if (f->nd == 0 || (f->flags & (kArrayCContiguous | kFContiguous)) != 0) {
    at(f->data, count * item);
    return;
  }
  const int last = f->nd - 1;
  const Py_ssize_t inner = f->dimensions[last];
  const Py_ssize_t step = f->strides[last];
  std::array<Py_ssize_t, kMostArrayDims>
      index{};  // (no allocation: called for each array a run writes)
  while (true) {
    char* row = f->data;
    for (int d = 0; d < last; ++d) {
      row += index[static_cast<std::size_t>(d)] * f->strides[d];
    }
    if (step == item) {
      at(row, inner * item);
    } else {
      for (Py_ssize_t i = 0; i < inner; ++i) {
        at(row + i * step, item);
      }
    }
    int d = last - 1;
    for (; d >= 0; --d) {
      auto& k = index[static_cast<std::size_t>(d)];
      if (++k < f->dimensions[d]) {
        break;
      }
      k = 0;
    }
    if (d < 0) {
      return;
    }
  }
}

// The bits of a NumPy scalar of dtype `t` (its value follows the object's header, as NumPy's
// scalar objects lay it out) in a slot: floats as the code reads them (.f, .f32), ints widened.
unsigned long long scalar_bits(PyObject* obj, DType t) {
  const char* value = reinterpret_cast<const char*>(obj) + sizeof(PyObject);
  unsigned long long bits = 0;
  auto widen = [&](auto sample) {
    decltype(sample) v;
    std::memcpy(&v, value, sizeof v);
    const auto wide =
        static_cast<long long>(v);  // NOLINT(bugprone-signed-char-misuse): int8 is signed
    std::memcpy(&bits, &wide, sizeof bits);
  };
  switch (t) {
    case DType::kFloat64:
    case DType::kUInt64:
    case DType::kInt64:
      std::memcpy(&bits, value, 8);
      break;
    case DType::kFloat32:
      std::memcpy(&bits, value, 4);
      break;
    case DType::kBool:
      bits = *reinterpret_cast<const unsigned char*>(value) != 0 ? 1 : 0;
      break;
    case DType::kInt8:
      widen(std::int8_t{});
      break;
    case DType::kInt16:
      widen(std::int16_t{});
      break;
    case DType::kInt32:
      widen(std::int32_t{});
      break;
    case DType::kUInt8:
      widen(std::uint8_t{});
      break;
    case DType::kUInt16:
      widen(std::uint16_t{});
      break;
    case DType::kUInt32:
      widen(std::uint32_t{});
      break;
    default:
      break;
  }
  return bits;
}

// A NumPy scalar of type `type` (dtype `t`) holding the slot's value.
PyObject* make_scalar(const py::object& type, DType t, unsigned long long bits) {
  PyObject* number = nullptr;
  const char k = kind(t);
  if (k == 'f') {
    double d = 0;
    if (t == DType::kFloat32) {
      float f = 0;
      std::memcpy(&f, &bits, sizeof f);
      d = f;
    } else {
      std::memcpy(&d, &bits, sizeof d);
    }
    number = PyFloat_FromDouble(d);
  } else if (k == 'b') {
    number = PyBool_FromLong(bits != 0 ? 1 : 0);
  } else if (t == DType::kUInt64) {
    number = PyLong_FromUnsignedLongLong(bits);
  } else {
    long long i = 0;
    std::memcpy(&i, &bits, sizeof i);
    number = PyLong_FromLongLong(i);
  }
  if (number == nullptr) {
    return nullptr;
  }
  PyObject* r = PyObject_CallOneArg(type.ptr(), number);
  Py_DECREF(number);
  return r;
}

}  // namespace

WholeOptions& whole_options() {
  static WholeOptions options;
  return options;
}

WholeLoop::WholeLoop(WholeSource source) : source_(std::move(source)) {
  const py::object numpy = loaded_module("numpy");
  ndarray_ = numpy.attr("ndarray");
  empty_ = numpy.attr("empty");
  auto type_of_kind = [&](const WType& t) {
    return t.kind == Kind::kScalar
               ? py::object(numpy.attr("dtype")(std::string(name(t.dtype))).attr("type"))
               : py::object();
  };
  for (const WType& t : source_.args) {
    types_.push_back(type_of_kind(t));
    descrs_.push_back(t.kind == Kind::kArray ? numpy.attr("dtype")(std::string(name(t.dtype)))
                                             : py::object());
  }
  for (std::size_t k = 0; k < source_.outputs.size(); ++k) {
    const WType& t = source_.outputs[k];
    types_.push_back(type_of_kind(t));
    const bool out = k < source_.handed_out.size() && source_.handed_out[k];
    out_dtypes_.push_back(out ? numpy.attr("dtype")(std::string(name(t.dtype))) : py::object());
  }
  std::sort(source_.written.begin(), source_.written.end());
  source_.written.erase(std::unique(source_.written.begin(), source_.written.end()),
                        source_.written.end());
  kernel_ = native_kernel(source_.code, "sot_whole", whole_options().sync.load());
}

bool WholeLoop::ready() const {
  return gave_up_ < kGiveUpLimit && kernel_->state() == NativeKernel::State::kReady;
}

bool WholeLoop::retired() const {
  return gave_up_ >= kGiveUpLimit || kernel_->state() == NativeKernel::State::kFailed;
}

bool WholeLoop::read_args(PyObject* const* args, std::size_t nargs,
                          std::vector<unsigned long long>* in,
                          std::vector<SlotArray>* arrays) const {
  if (nargs != source_.args.size()) {
    return false;
  }
  const std::size_t first_test = nargs - source_.tests;
  for (std::size_t k = 0; k < nargs; ++k) {
    PyObject* a = args[k];
    const WType& t = source_.args[k];
    unsigned long long& slot = (*in)[k];
    if (k >= first_test) {
      const int truth = PyObject_IsTrue(a);
      if (truth < 0) {
        PyErr_Clear();
        return false;
      }
      slot = static_cast<unsigned long long>(truth);
      continue;
    }
    switch (t.kind) {
      case Kind::kPyInt: {
        if (!PyLong_CheckExact(a)) {
          return false;
        }
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
        if (overflow != 0) {
          return false;
        }
        std::memcpy(&slot, &v, sizeof slot);
        break;
      }
      case Kind::kPyFloat: {
        if (!PyFloat_CheckExact(a)) {
          return false;
        }
        const double v = PyFloat_AS_DOUBLE(a);
        std::memcpy(&slot, &v, sizeof slot);
        break;
      }
      case Kind::kPyBool:
        if (!PyBool_Check(a)) {
          return false;
        }
        slot = a == Py_True ? 1 : 0;
        break;
      case Kind::kScalar:
        if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(types_[k].ptr())) {
          return false;
        }
        slot = scalar_bits(a, t.dtype);
        break;
      case Kind::kArray: {
        if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(ndarray_.ptr())) {
          return false;
        }
        const ArrayFields* f = array_fields(a);
        if (f->nd != t.ndim || (f->descr != descrs_[k].ptr() &&
                                PyObject_RichCompareBool(f->descr, descrs_[k].ptr(), Py_EQ) != 1)) {
          PyErr_Clear();
          return false;
        }
        if ((f->flags & kArrayAligned) == 0) {
          return false;  // (NumPy's loops copy an unaligned array first: their sums' order differs)
        }
        if ((f->flags & kArrayWriteable) == 0 &&
            std::find(source_.written.begin(), source_.written.end(), static_cast<int>(k)) !=
                source_.written.end()) {
          return false;  // (a read-only array written: the op's own path raises)
        }
        arrays->push_back(SlotArray{f->data, reinterpret_cast<const long long*>(f->dimensions),
                                    reinterpret_cast<const long long*>(f->strides), f->nd});
        break;
      }
    }
  }
  // (pointers into `arrays` once it has stopped growing)
  std::size_t next = 0;
  for (std::size_t k = 0; k < first_test; ++k) {
    if (source_.args[k].kind == Kind::kArray) {
      const SlotArray* p = &(*arrays)[next++];
      (*in)[k] = reinterpret_cast<std::uintptr_t>(p);  // (the slot's pointer, SotSlot.a)
    }
  }
  return true;
}

PyObject* WholeLoop::carried_array(PyObject* const* args, std::size_t k,
                                   unsigned long long data) const {
  PyObject* input = args[k];
  // (a carried array: the input itself where no step ran, else a new C-ordered array of the
  // input's shape and dtype holding the buffer's items)
  if (data == 0) {
    Py_INCREF(input);
    return input;
  }
  if (data <= source_.args.size()) {  // (a carried array handed on as argument data - 1)
    return Py_NewRef(args[data - 1]);
  }
  const ArrayFields* f = array_fields(input);
  PyObject* shape = PyTuple_New(f->nd);
  if (shape == nullptr) {
    return nullptr;
  }
  long long count = 1;
  for (int d = 0; d < f->nd; ++d) {
    count *= f->dimensions[d];
    PyObject* size = PyLong_FromSsize_t(f->dimensions[d]);
    if (size == nullptr) {
      Py_DECREF(shape);
      return nullptr;
    }
    PyTuple_SET_ITEM(shape, d, size);
  }
  PyObject* made = PyObject_CallFunctionObjArgs(empty_.ptr(), shape, descrs_[k].ptr(), nullptr);
  Py_DECREF(shape);
  if (made == nullptr) {
    return nullptr;
  }
  const ArrayFields* m = array_fields(made);
  const char* from = nullptr;  // (the slot holds the buffer's address)
  std::memcpy(&from, &data, sizeof from);
  std::memcpy(m->data, from, static_cast<std::size_t>(count * itemsize(source_.outputs[k].dtype)));
  return made;
}

PyObject* WholeLoop::outputs(PyObject* const* args, const std::vector<unsigned long long>& out,
                             std::vector<py::object>& made) const {
  const std::size_t n = source_.outputs.size();
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(n));
  if (tuple == nullptr) {
    return nullptr;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const WType& t = source_.outputs[k];
    PyObject* v = nullptr;
    long long i = 0;
    double d = 0;
    std::memcpy(&i, &out[k], sizeof i);
    std::memcpy(&d, &out[k], sizeof d);
    if (k < source_.unread.size() && source_.unread[k]) {
      v = Py_NewRef(Py_None);
      PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(k), v);
      continue;
    }
    if (k < source_.handed_out.size() && source_.handed_out[k]) {  // (an argument, or made)
      v = out[k] != 0 ? Py_NewRef(args[out[k] - 1]) : made[k].release().ptr();
      PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(k), v);
      continue;
    }
    switch (t.kind) {
      case Kind::kPyInt:
        v = PyLong_FromLongLong(i);
        break;
      case Kind::kPyFloat:
        v = PyFloat_FromDouble(d);
        break;
      case Kind::kPyBool:
        v = PyBool_FromLong(i != 0 ? 1 : 0);
        break;
      case Kind::kScalar:
        v = make_scalar(types_[source_.args.size() + k], t.dtype, out[k]);
        break;
      case Kind::kArray:  // (a carried array: the loop op's argument k its input)
        v = carried_array(args, k, out[k]);
        break;
    }
    if (v == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(k), v);
  }
  return tuple;
}

void WholeLoop::note_give_up(const std::string& why) {
  ++gave_up_;
  last_give_up_ = why;
}

LoopCode::Outcome WholeLoop::run(PyObject* const* args, std::size_t nargs, PyObject** result) {
  std::vector<unsigned long long> in(nargs);
  std::vector<SlotArray> arrays;
  arrays.reserve(nargs);
  if (!read_args(args, nargs, &in, &arrays)) {
    note_give_up("arguments of other kinds than the translation saw");
    return Outcome::kGaveUp;
  }
  // What puts back the arrays the code writes if it gives up: copies of them where they are small,
  // else a log of each element written (a few writes into a large array).
  long long written_bytes = 0;
  for (const int w : source_.written) {
    const ArrayFields* f = array_fields(args[w]);
    long long n = itemsize(source_.args[static_cast<std::size_t>(w)].dtype);
    for (int d = 0; d < f->nd; ++d) {
      n *= f->dimensions[d];
    }
    written_bytes += n;
  }
  const bool copies = written_bytes <= kCopyLimitBytes;
  if (copies) {  // (their bytes, not NumPy copies: a copy's call costs more than a small run)
    t_saved.resize(static_cast<std::size_t>(written_bytes));
    char* to = t_saved.data();
    for (const int w : source_.written) {
      const long long item = itemsize(source_.args[static_cast<std::size_t>(w)].dtype);
      each_run(array_fields(args[w]), item, [&](char* at, long long bytes) {
        std::memcpy(to, at, static_cast<std::size_t>(bytes));
        to += bytes;
      });
    }
  }
  std::vector<unsigned long long> out(source_.outputs.size() + 1);
  OutArrays outs{&out_dtypes_, &source_.outputs, empty_.ptr(),
                 std::vector<py::object>(source_.outputs.size())};
  Env env{check_signals,
          -1,
          nullptr,
          0,
          0,
          grow_log,
          numpy_ddot(nullptr),
          nullptr,
          0,
          0,
          -1,
          chunk_at,
          numpy_dgemv(nullptr),
          out_array,
          &outs,
          source_.ufunc_loops.loops.data()};
  if (source_.makes_arrays && !chunk_at(&env, 0, 0)) {
    return Outcome::kGaveUp;
  }
  if (!copies && !source_.written.empty()) {
    env.log = t_undo.data();
    env.room = static_cast<long long>(t_undo.size());
    if (env.room == 0 && !grow_log(&env)) {
      return Outcome::kGaveUp;
    }
  }
  clear_fe_flags();
  const auto fn = reinterpret_cast<WholeFn>(kernel_->symbol());  // NOLINT: dlsym's symbol
  const int rc = fn(in.data(), out.data(), &env);
  const int flags = std::fetestexcept(numpy_fe_flags());
  if (flags != 0) {
    clear_fe_flags();
  }
  struct Trim {  // (after the outputs are made: carried arrays are read from the arena)
    ~Trim() { trim_chunks(); }
  } trim;
  if (rc == 2) {
    return Outcome::kError;
  }
  const int reported = flags != 0 ? reported_fe_flags(flags) : 0;
  if (rc == 1 || reported != 0) {
    for (long long k = env.used - 1; k >= 0; --k) {  // (the log, last write first)
      const Undo& u = env.log[k];
      std::memcpy(u.at, &u.old, u.size);
    }
    const char* from = t_saved.data();
    for (const int w : copies ? source_.written : std::vector<int>{}) {
      const long long item = itemsize(source_.args[static_cast<std::size_t>(w)].dtype);
      each_run(array_fields(args[w]), item, [&](char* at, long long bytes) {
        std::memcpy(at, from, static_cast<std::size_t>(bytes));
        from += bytes;
      });
    }
    note_give_up(rc == 1 && env.why >= 0 && static_cast<std::size_t>(env.why) < source_.ops.size()
                     ? "at " + source_.ops[static_cast<std::size_t>(env.why)]
                     : "a floating-point flag NumPy reports");
    return Outcome::kGaveUp;
  }
  *result = outputs(args, out, outs.made);
  if (*result == nullptr) {
    return Outcome::kError;
  }
  ++runs_;
  return Outcome::kDone;
}

std::string WholeLoop::status() const {
  std::string s;
  switch (kernel_->state()) {
    case NativeKernel::State::kCompiling:
      return "compiling";
    case NativeKernel::State::kFailed:
      return "failed: " + kernel_->error();
    case NativeKernel::State::kReady:
      break;
  }
  char text[96];
  if (kernel_->from_disk()) {
    std::snprintf(text, sizeof text, "ready (loaded from the disk cache in %.2f ms)",
                  kernel_->compile_seconds() * 1e3);
  } else {
    std::snprintf(text, sizeof text, "ready (compiled in %.2f s)", kernel_->compile_seconds());
  }
  s = text;
  if (gave_up_ > 0) {
    s += ", gave up " + std::to_string(gave_up_) + " time" + (gave_up_ > 1 ? "s" : "") +
         " (last: " + last_give_up_ + ")";
    if (gave_up_ >= kGiveUpLimit) {
      s += "; not run again";
    }
  }
  return s;
}

std::shared_ptr<LoopCode> native_loop(const LoopSpec& spec) {
  if (!whole_options().enabled.load()) {
    return nullptr;
  }
  std::string why;
  auto source = emit_loop(spec, &why);
  if (!source) {
    return std::make_shared<UnemittedLoop>(why);
  }
  // (a graph of thousands of ops, unrolled: its compile would take minutes of a core - a 310 KB
  // source takes 5 s here, a 7 MB one more than 3 minutes - where tier B compiles group by group)
  constexpr std::size_t kMostSourceBytes = std::size_t{512} * 1024;
  if (source->code.size() > kMostSourceBytes) {
    return std::make_shared<UnemittedLoop>(
        "its source is " + std::to_string(source->code.size() / 1024) + " KB, past the " +
        std::to_string(kMostSourceBytes / 1024) + " KB tier C compiles");
  }
  const long long largest = source->largest_array;
  auto code = std::make_shared<WholeLoop>(std::move(*source));
  if (largest > kMostItems) {
    return std::make_shared<TimedLoop>(std::move(code), largest);
  }
  return code;
}

}  // namespace sot::graph::whole
