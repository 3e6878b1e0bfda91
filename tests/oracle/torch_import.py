"""PyTorch for the oracles that compare with it (optimizer_oracle.py, train_oracle.py).

Debian's python3-torch lives in the system's Python, which the project's .venv may not
see: `import_torch` runs the calling script again under /usr/bin/python3 when only that
Python has PyTorch. Without PyTorch anywhere it exits 77 (a skip), or 1 under CI=true
once scripts/setup installs PyTorch (so CI cannot skip what it is meant to run).
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DEBIAN_PYTHON = "/usr/bin/python3"


def import_torch(oracle):
    try:
        import torch
        return torch
    except ImportError:
        pass
    if (not os.environ.get("SEXPGPU_ORACLE_REEXEC") and os.path.exists(DEBIAN_PYTHON)
            and os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON)
            and subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0):
        os.environ["SEXPGPU_ORACLE_REEXEC"] = "1"
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    setup = ROOT / "scripts" / "setup"
    installs = setup.exists() and "torch" in setup.read_text()
    print("%s: SKIPPED: PyTorch is not installed for %s%s (apt-get install python3-torch); scripts/setup %s" % (
        oracle, sys.executable, "" if os.path.realpath(sys.executable) == DEBIAN_PYTHON else " nor for " + DEBIAN_PYTHON,
        "installs it, so under CI this is a failure" if installs else "does not install it yet, so this is a skip"))
    sys.exit(1 if os.environ.get("CI") == "true" and installs else 77)
