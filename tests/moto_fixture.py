#!/usr/bin/env python3
"""An S3-compatible server for the tests: moto's server (PyPI `moto[server]`, which
scripts/setup installs into .venv) on a free loopback port, with one bucket.

As a module: `with MotoServer() as server:` gives `server.environment()`, the AWS_*
variables that point SexpGPU at it (and SEXPGPU_TEST_BUCKET). `MotoServer(https=True)`
serves over TLS with a self-signed certificate for 127.0.0.1, made for it
(`server.certificate`, the PEM file that AWS_CA_BUNDLE names to trust it). As a program it runs one
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


def self_signed_certificate(folder):
    """A key and a self-signed certificate for 127.0.0.1 (its IP in subjectAltName, as
    a client checks it), as PEM files in `folder`: (certificate, key). `cryptography`
    comes with moto."""
    import datetime
    import ipaddress
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sexpgpu test 127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    cert_path, key_path = os.path.join(folder, "server.pem"), os.path.join(folder, "server.key")
    with open(cert_path, "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path


class MotoServer:
    def __init__(self, https=False):
        self.port = free_port()
        self.https = https
        self.endpoint = f"{'https' if https else 'http'}://127.0.0.1:{self.port}"
        self.process = None
        self.log = tempfile.TemporaryFile()
        self.folder = tempfile.TemporaryDirectory(prefix="moto-") if https else None
        self.certificate = None

    def __enter__(self):
        require_moto()
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        context = None
        if self.https:
            import ssl
            self.certificate, key = self_signed_certificate(self.folder.name)
            command += ["--ssl-cert", self.certificate, "--ssl-key", key]
            context = ssl.create_default_context(cafile=self.certificate)
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=2, context=context).read()
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
        if self.folder:
            self.folder.cleanup()
            self.folder = None

    def environment(self, endpoint=None):
        env = dict(os.environ)
        env.update(AWS_ENDPOINT_URL=endpoint or self.endpoint, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing",
                   AWS_SECRET_ACCESS_KEY="testing-secret", SEXPGPU_TEST_BUCKET=BUCKET)
        env.pop("AWS_SESSION_TOKEN", None)
        env.pop("AWS_ENDPOINT_URL_S3", None)
        env.pop("AWS_CA_BUNDLE", None)
        if self.certificate:
            env["AWS_CA_BUNDLE"] = self.certificate
        return env

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id="testing",
                            aws_secret_access_key="testing-secret", verify=self.certificate if self.https else None)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: moto_fixture.py COMMAND ARGS...")
    with MotoServer() as server:
        sys.exit(subprocess.run(sys.argv[1:], env=server.environment()).returncode)


if __name__ == "__main__":
    main()
