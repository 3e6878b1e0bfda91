"""A client of `sexpgpu serve`: one Unix-socket connection, numpy arrays in and out.

The protocol (docs/serving.md): every message is a frame, a little-endian u64 length and
that many bytes. The server's first frame is the handshake, JSON that describes the
model's inputs and outputs (name, shape, dtype). A call is one frame holding every input
in the handshake's order, each tensor's elements in row-major order, little-endian, with
no header; its answer is one frame: the status byte 0 and every output likewise, or 1 and
the error as UTF-8 text. bf16 travels as the high half of the f32, rounded to nearest
even; bool as one byte, 0 or 1.
"""

import json
import socket
import struct
import threading
from dataclasses import dataclass

import numpy as np

__all__ = ["Client", "ProtocolError", "ServeError", "TensorSpec", "bf16_bits", "from_bf16_bits"]

# The wire dtype of each protocol dtype; bf16 travels as uint16 bits.
_WIRE = {
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
    "i32": np.dtype("<i4"),
    "i64": np.dtype("<i8"),
    "bf16": np.dtype("<u2"),
    "bool": np.dtype("u1"),
}
# The numpy dtype a caller passes and gets back for each; numpy has no bf16, so float32.
_NUMPY = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bf16": np.float32,
          "bool": np.bool_}
_KIND = {"f32": "f", "f64": "f", "bf16": "f", "i32": "i", "i64": "i", "bool": "b"}

# The handshake is small JSON; a first frame claiming more is not this protocol.
_MOST_HANDSHAKE_BYTES = 16 << 20
# An error answer's text; a frame longer than this that is not the outputs' length is refused
# before it is read.
_MOST_ERROR_BYTES = 1 << 20


class ServeError(Exception):
    """The server answered a call with an error; `message` is its text."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class ProtocolError(ConnectionError):
    """The connection closed, or the server's bytes are not the protocol. The client is closed."""


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of the served model, as the handshake describes it."""

    name: str
    shape: tuple
    dtype: str  # "f32", "bf16", "f64", "i32", "i64" or "bool"

    @property
    def numpy_dtype(self):
        """The numpy dtype `call` takes and gives for it (float32 for bf16)."""
        return np.dtype(_NUMPY[self.dtype])

    @property
    def nbytes(self):
        """Its size on the wire."""
        return int(np.prod(self.shape, dtype=np.int64)) * _WIRE[self.dtype].itemsize

    def __str__(self):
        return f"{self.name} [{', '.join(map(str, self.shape))}] {self.dtype}"


def bf16_bits(values):
    """float32 values to their bf16 bits (uint16), rounded to nearest even; a NaN stays a quiet NaN."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    rounded = np.where(nan, (bits >> 16) | 0x40, rounded)
    return rounded.astype("<u2")


def from_bf16_bits(bits):
    """bf16 bits (uint16) to the float32 values they stand for, exactly."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _spec(entry, side):
    if not isinstance(entry, dict):
        raise ProtocolError(f"the handshake's {side} hold {entry!r}, not an object with name, shape and dtype")
    name, shape, dtype = entry.get("name"), entry.get("shape"), entry.get("dtype")
    if not isinstance(name, str):
        raise ProtocolError(f"the handshake names one of its {side} {name!r}, not a string")
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                              for n in shape):
        raise ProtocolError(f"the handshake gives `{name}` the shape {shape!r}, not a list of sizes")
    if dtype not in _WIRE:
        raise ProtocolError(f"the handshake gives `{name}` the dtype {dtype!r}; this client knows "
                            f"{', '.join(_WIRE)}")
    return TensorSpec(name, tuple(shape), dtype)


# --- Encoding and decoding (the Client's and the library's Model's) ----------------------


def encode_inputs(inputs, args, kwargs):
    """The bytes of each input of one record, in the order of `inputs` (TensorSpecs): `args`
    positional in that order, `kwargs` by name. Wrong ones raise TypeError or ValueError."""
    given = _arrange(inputs, args, kwargs)
    return [_encode(spec, value) for spec, value in zip(inputs, given)]


def _arrange(inputs, args, kwargs):
    if len(args) > len(inputs):
        raise TypeError(f"the model takes {len(inputs)} inputs ({', '.join(i.name for i in inputs)}); "
                        f"{len(args)} were given")
    names = [i.name for i in inputs]
    given = list(args) + [None] * (len(names) - len(args))
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(f"the model has no input `{name}`; its inputs are {', '.join(names)}")
        k = names.index(name)
        if k < len(args):
            raise TypeError(f"the input `{name}` is given twice, by position and by name")
        given[k] = value
    missing = [name for name, value in zip(names, given) if value is None]
    if missing:
        raise TypeError(f"the call lacks the input{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return given


def _encode(spec, value):
    want = spec.numpy_dtype
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype != want:
            raise TypeError(f"the input `{spec.name}` is {spec.dtype}, which takes a {want} array, "
                            f"not {array.dtype}")
    else:
        loose = np.asarray(value)
        kind = _KIND[spec.dtype]
        fits = loose.dtype.kind == kind or (kind == "f" and loose.dtype.kind in "iu") or \
            (kind == "i" and loose.dtype.kind == "u")
        if not fits or loose.dtype == object:
            raise TypeError(f"the input `{spec.name}` is {spec.dtype}; {type(value).__name__} of {loose.dtype} "
                            f"does not convert to it")
        array = loose.astype(want)
        if kind == "i" and not np.array_equal(array, loose):
            raise TypeError(f"the input `{spec.name}` is {spec.dtype}; a value given is out of its range")
    if array.shape != spec.shape:
        raise ValueError(f"the input `{spec.name}` has the shape [{', '.join(map(str, spec.shape))}], "
                         f"not [{', '.join(map(str, array.shape))}]")
    if spec.dtype == "bf16":
        return bf16_bits(array).tobytes()
    return np.ascontiguousarray(array, dtype=_WIRE[spec.dtype]).tobytes()


def decode_outputs(outputs, buffer, at):
    """The outputs (TensorSpecs) by name, as numpy arrays, from their bytes in order in
    `buffer` from offset `at`."""
    out = {}
    for spec in outputs:
        wire = np.frombuffer(buffer, dtype=_WIRE[spec.dtype], count=spec.nbytes // _WIRE[spec.dtype].itemsize,
                             offset=at).reshape(spec.shape)
        at += spec.nbytes
        if spec.dtype == "bf16":
            out[spec.name] = from_bf16_bits(wire)
        elif spec.dtype == "bool":
            out[spec.name] = wire != 0
        else:
            out[spec.name] = wire.astype(spec.numpy_dtype, copy=False)
    return out


class Client:
    """A connection to a model that `sexpgpu serve --socket PATH` serves.

    Connecting reads the handshake: `about` is all of it (the checkpoint, its step and slug,
    the precision, ...), `inputs` and `outputs` the model's tensors. `call` runs the model
    once. A Client makes one call at a time (calls from several threads wait their turn);
    the server runs the calls of several clients together.
    """

    def __init__(self, path, timeout=None):
        """Connects to the socket at `path`; `timeout` (seconds) bounds each wait for the server."""
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            self._sock.connect(path)
            self.about = self._read_handshake(path)
            self.inputs = tuple(_spec(e, "inputs") for e in self.about["inputs"])
            self.outputs = tuple(_spec(e, "outputs") for e in self.about["outputs"])
        except BaseException:
            self.close()
            raise
        self._answer_bytes = 1 + sum(o.nbytes for o in self.outputs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes the connection; later calls raise ProtocolError."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def call(self, *args, **kwargs):
        """Runs the model on one record: its inputs positional, in the order of `inputs`, or
        by name; returns the outputs by name, in order, as numpy arrays (float32 for bf16).

        Each input must have its exact shape; a numpy array its exact dtype (float32 for a
        bf16 input); a list or number converts when its kind fits (floats for a float input,
        whole numbers in range for an integer one, booleans for bool). Wrong ones raise
        ValueError or TypeError before anything is sent. An error the server answers raises
        ServeError with its text; a closed connection or bytes out of protocol, ProtocolError;
        the client's timeout, TimeoutError. After the last two the client is closed, since the
        connection may be in the middle of a frame.
        """
        payload = b"".join(encode_inputs(self.inputs, args, kwargs))
        with self._lock:
            if self._sock is None:
                raise ProtocolError("the client is closed")
            try:
                self._sock.sendall(struct.pack("<Q", len(payload)) + payload)
                length = self._read_length("the answer")
                if length == 0 or (length != self._answer_bytes and length > _MOST_ERROR_BYTES):
                    raise ProtocolError(f"the answer frame has {length} bytes; the outputs take "
                                        f"{self._answer_bytes - 1} after the status byte")
                reply = self._read_exactly(length, "the answer")
            except (ProtocolError, OSError):
                self.close()
                raise
        status = reply[0]
        if status == 1:
            raise ServeError(bytes(reply[1:]).decode("utf-8", errors="replace"))
        if status != 0 or length != self._answer_bytes:
            self.close()
            raise ProtocolError(f"the answer has status {status} and {length} bytes; expected status 0 or 1, "
                                f"and {self._answer_bytes} bytes with the outputs")
        return decode_outputs(self.outputs, reply, 1)

    # --- Frames ----------------------------------------------------------------------------

    def _read_handshake(self, path):
        length = self._read_length("the handshake")
        if length > _MOST_HANDSHAKE_BYTES:
            raise ProtocolError(f"the handshake frame claims {length} bytes; is {path} a sexpgpu serve socket?")
        handshake = bytes(self._read_exactly(length, "the handshake"))
        # A server that holds its most clients answers an error in the handshake's place.
        if handshake[:1] == b"\x01":
            raise ProtocolError(f"{path} refused the connection: {handshake[1:].decode('utf-8', 'replace')}")
        try:
            about = json.loads(handshake.decode("utf-8"))
        except ValueError as e:
            raise ProtocolError(f"the handshake is not JSON: {e}") from None
        if not isinstance(about, dict) or not isinstance(about.get("inputs"), list) \
                or not isinstance(about.get("outputs"), list):
            raise ProtocolError("the handshake is not an object with `inputs` and `outputs` lists")
        return about

    def _read_length(self, what):
        (length,) = struct.unpack("<Q", self._read_exactly(8, what))
        return length

    def _read_exactly(self, n, what):
        buffer = bytearray(n)
        view = memoryview(buffer)
        got = 0
        while got < n:
            k = self._sock.recv_into(view[got:])
            if k == 0:
                raise ProtocolError(f"the server closed the connection in the middle of {what}: "
                                    f"{got} of {n} bytes came")
            got += k
        return buffer
