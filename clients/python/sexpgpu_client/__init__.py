"""Call a model that `sexpgpu serve` serves on a Unix socket, or run one in this process
through libsexpgpu, with numpy arrays.

    from sexpgpu_client import Client, Model, greedy

    with Client("/tmp/my-model.sock") as model:
        print(model.inputs, model.outputs)
        outputs = model.call(tokens, at)          # {name: numpy array}
        print(greedy(model, [5, 8], end=0))       # a model served with --at

    with Model("/tmp/tiny-model", at=True) as model:   # the same, without a server
        print(greedy(model, [5, 8], end=0))
"""

from .client import Client, ProtocolError, ServeError, TensorSpec, bf16_bits, from_bf16_bits
from .library import Model, ModelError, load_library
from .sampling import greedy, sample

__all__ = ["Client", "Model", "ModelError", "ProtocolError", "ServeError", "TensorSpec", "bf16_bits",
           "from_bf16_bits", "greedy", "load_library", "sample"]
