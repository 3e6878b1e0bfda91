#!/usr/bin/env python3
"""An S3-compatible server for the tests: moto's server (PyPI `moto[server]`, which
scripts/setup installs into .venv) on a free loopback port, with one bucket.

As a module: `with MotoServer() as server:` gives `server.environment()`, the AWS_*
variables that point SexpGPU at it (and SEXPGPU_TEST_BUCKET). As a program it runs one
command under such a server and stops the server after it:

    moto_fixture.py COMMAND ARGS...

Where moto is missing it says so and exits 77 (CTest's skip), or 1 under CI=true, where
a skipped test would hide that the environment is incomplete.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BUCKET = "sexpgpu-test"
SKIP = 77


def require_moto():
    try:
        import moto.server  # noqa: F401
        import boto3  # noqa: F401
    except ImportError as error:
        print(f"moto_fixture: moto's server is not installed ({error}); scripts/setup installs it into .venv",
              file=sys.stderr)
        sys.exit(1 if os.environ.get("CI") == "true" else SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    def __init__(self):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = None
        self.log = tempfile.TemporaryFile()

    def __enter__(self):
        require_moto()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=2).read()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.log.seek(0)
                    self.stop()
                    raise RuntimeError("moto_fixture: moto's server did not start:\n" + self.log.read().decode())
                time.sleep(0.1)
        self.client().create_bucket(Bucket=BUCKET)
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def environment(self, endpoint=None):
        env = dict(os.environ)
        env.update(AWS_ENDPOINT_URL=endpoint or self.endpoint, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing",
                   AWS_SECRET_ACCESS_KEY="testing-secret", SEXPGPU_TEST_BUCKET=BUCKET)
        env.pop("AWS_SESSION_TOKEN", None)
        env.pop("AWS_ENDPOINT_URL_S3", None)
        return env

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id="testing",
                            aws_secret_access_key="testing-secret")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: moto_fixture.py COMMAND ARGS...")
    with MotoServer() as server:
        sys.exit(subprocess.run(sys.argv[1:], env=server.environment()).returncode)


if __name__ == "__main__":
    main()
