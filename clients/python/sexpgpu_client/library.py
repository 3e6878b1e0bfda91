"""A model run inside this Python process through libsexpgpu (docs/library.md), numpy arrays
in and out, with no server and no socket.

The library is the file $SEXPGPU_LIBRARY names, else libsexpgpu.so.0 where the system's
loader finds it (LD_LIBRARY_PATH, the folders ldconfig knows). A Model takes and gives what
a Client does: its `call` checks the inputs alike and returns the outputs by name, with the
bits `sexpgpu serve` answers.
"""

import ctypes
import os
import threading

from .client import ServeError, TensorSpec, decode_outputs, encode_inputs

__all__ = ["Model", "ModelError", "load_library"]

_SONAME = "libsexpgpu.so.0"
_MAX_RANK = 8


class ModelError(ServeError):
    """libsexpgpu refused: `code` is its code ("E-CKPT-003", "E-SERVE-008", ...), `message`
    "error[CODE]: ..." as `sexpgpu serve` words it."""

    def __init__(self, code, text):
        super().__init__(f"error[{code}]: {text}")
        self.code = code


class _Options(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("device", ctypes.c_char_p), ("cpu_cores", ctypes.c_int),
                ("batch", ctypes.c_int), ("outputs", ctypes.POINTER(ctypes.c_char_p)),
                ("output_count", ctypes.c_size_t), ("at", ctypes.c_int), ("precision", ctypes.c_char_p),
                ("trained", ctypes.c_int)]


class _Info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * _MAX_RANK), ("byte_size", ctypes.c_size_t)]


class _Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("bytes", ctypes.c_size_t)]


_loaded = None
_loading = threading.Lock()


def load_library():
    """libsexpgpu, loaded once: $SEXPGPU_LIBRARY, else the system's search. OSError says
    where it looked when it is not found."""
    global _loaded
    with _loading:
        if _loaded is None:
            path = os.environ.get("SEXPGPU_LIBRARY")
            try:
                lib = ctypes.CDLL(path or _SONAME)
            except OSError as e:
                where = f"SEXPGPU_LIBRARY={path}" if path else f"{_SONAME} by the system's search (LD_LIBRARY_PATH)"
                raise OSError(f"libsexpgpu not found as {where}: {e}; install it (docs/library.md) or set "
                              "SEXPGPU_LIBRARY to the file") from None
            _declare(lib)
            _loaded = lib
        return _loaded


def _declare(lib):
    error, model, info = ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Info)
    signatures = {
        "sexpgpu_version": (ctypes.c_char_p, []),
        "sexpgpu_options_init": (None, [ctypes.POINTER(_Options)]),
        "sexpgpu_open": (error, [ctypes.c_char_p, ctypes.POINTER(_Options), ctypes.POINTER(model)]),
        "sexpgpu_input_count": (ctypes.c_int, [model]),
        "sexpgpu_output_count": (ctypes.c_int, [model]),
        "sexpgpu_input_info": (error, [model, ctypes.c_int, info]),
        "sexpgpu_output_info": (error, [model, ctypes.c_int, info]),
        "sexpgpu_run": (error, [model, ctypes.POINTER(_Buffer), ctypes.c_size_t, ctypes.POINTER(_Buffer),
                                ctypes.c_size_t]),
        "sexpgpu_error_code": (ctypes.c_char_p, [error]),
        "sexpgpu_error_message": (ctypes.c_char_p, [error]),
        "sexpgpu_error_free": (None, [error]),
        "sexpgpu_close": (None, [model]),
    }
    for name, (result, arguments) in signatures.items():
        function = getattr(lib, name)
        function.restype = result
        function.argtypes = arguments


def _check(lib, error):
    """Raises the library's error, freed; nothing for NULL."""
    if error:
        code = lib.sexpgpu_error_code(error).decode()
        text = lib.sexpgpu_error_message(error).decode("utf-8", errors="replace")
        lib.sexpgpu_error_free(error)
        raise ModelError(code, text)


class Model:
    """The model at `location` (a checkpoint LOC/step-N, a location for its newest, or a folder
    `sexpgpu export` wrote), run in this process. The keywords are serve's flags: `device`
    ("cpu", "reference", "cuda"), `cpu_cores` (0: all), `batch`, `outputs` (names, in order),
    `at`, `precision` ("bf16") and `trained`.

    One Model may be called from any number of threads at once: the library runs the calls
    that arrive while the device is busy together, up to `batch`, as serve does. Opening and
    calling raise ModelError with the library's code.
    """

    def __init__(self, location, *, device="cpu", cpu_cores=0, batch=1, outputs=(), at=False, precision=None,
                 trained=False):
        self._lib = load_library()
        self._handle = None
        options = _Options()
        self._lib.sexpgpu_options_init(ctypes.byref(options))
        names = [name.encode() for name in outputs]
        options.device = device.encode()
        options.cpu_cores = cpu_cores
        options.batch = batch
        options.outputs = (ctypes.c_char_p * max(len(names), 1))(*names)
        options.output_count = len(names)
        options.at = int(bool(at))
        options.precision = precision.encode() if precision else None
        options.trained = int(bool(trained))
        handle = ctypes.c_void_p()
        _check(self._lib, self._lib.sexpgpu_open(os.fsencode(location), ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle
        self.inputs = self._specs(self._lib.sexpgpu_input_count, self._lib.sexpgpu_input_info)
        self.outputs = self._specs(self._lib.sexpgpu_output_count, self._lib.sexpgpu_output_info)
        self._output_bytes = sum(o.nbytes for o in self.outputs)

    def _specs(self, count, info_of):
        specs = []
        for i in range(count(self._handle)):
            info = _Info()
            _check(self._lib, info_of(self._handle, i, ctypes.byref(info)))
            specs.append(TensorSpec(info.name.decode(), tuple(info.shape[:info.rank]), info.dtype.decode()))
        return tuple(specs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def close(self):
        """Closes the model; later calls raise ModelError (E-API-001)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._lib.sexpgpu_close(handle)

    def call(self, *args, **kwargs):
        """Runs the model on one record, as Client.call does: the inputs positional, in the
        order of `inputs`, or by name; returns the outputs by name, in order, as numpy arrays
        (float32 for bf16) you may change."""
        encoded = encode_inputs(self.inputs, args, kwargs)
        ins = (_Buffer * max(len(encoded), 1))()
        for k, data in enumerate(encoded):
            ins[k].data = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p)
            ins[k].bytes = len(data)
        answer = bytearray(self._output_bytes)
        whole = (ctypes.c_char * len(answer)).from_buffer(answer) if answer else None
        outs = (_Buffer * max(len(self.outputs), 1))()
        offset = 0
        for k, spec in enumerate(self.outputs):
            outs[k].data = ctypes.addressof(whole) + offset
            outs[k].bytes = spec.nbytes
            offset += spec.nbytes
        # ctypes lets go of the GIL for the call: other threads' calls join the batch.
        _check(self._lib, self._lib.sexpgpu_run(self._handle, ins, len(encoded), outs, len(self.outputs)))
        del whole
        return decode_outputs(self.outputs, answer, 0)
