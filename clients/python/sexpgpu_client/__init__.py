"""Call a model that `sexpgpu serve` serves on a Unix socket, with numpy arrays.

    from sexpgpu_client import Client, greedy

    with Client("/tmp/my-model.sock") as model:
        print(model.inputs, model.outputs)
        outputs = model.call(tokens, at)          # {name: numpy array}
        print(greedy(model, [5, 8], end=0))       # a model served with --at
"""

from .client import Client, ProtocolError, ServeError, TensorSpec, bf16_bits, from_bf16_bits
from .sampling import greedy, sample

__all__ = ["Client", "ProtocolError", "ServeError", "TensorSpec", "bf16_bits", "from_bf16_bits", "greedy", "sample"]
