#!/usr/bin/env python3
"""End-to-end tests of storage locations (docs/locations.md; issue 14): a run writes its
checkpoints to `o41://team/run` with SEXPGPU_O41_ROOT=s3://BUCKET/root on moto's S3
server (tests/moto_fixture.py), is killed, resumes, and its newest checkpoint is served
and exported from the same location; a fault case cuts the server off mid-upload.

Each case is one CTest test, e2e.storage_<case>: `storage_test.py SEXPGPU CASE`. Without
moto a case is skipped (failed under CI=true, where the environment must be complete).
"""

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2e_test  # noqa: E402
import serve_test  # noqa: E402
from e2e_test import Failure, Skip, expect, expect_error, train, training_dir  # noqa: E402

LOCATION = "o41://team/run"


def start_moto(https=False):
    """A started MotoServer (the caller stops it), or Skip (a failure under CI=true) where
    moto is missing."""
    try:
        import moto.server  # noqa: F401
        import boto3  # noqa: F401
    except ImportError as error:
        if os.environ.get("CI") == "true":
            raise Failure(f"moto's server is not installed ({error}); scripts/setup installs it")
        raise Skip(f"moto's server is not installed ({error}); scripts/setup installs it into .venv")
    import moto_fixture
    return moto_fixture.MotoServer(https).__enter__()


def use_storage(server, tmp, endpoint=None):
    """Points this process's environment (which sexpgpu inherits) at the server."""
    os.environ.update(server.environment(endpoint))
    os.environ["SEXPGPU_O41_ROOT"] = f"s3://{os.environ['SEXPGPU_TEST_BUCKET']}/root"
    os.environ["SEXPGPU_CACHE_DIR"] = os.path.join(tmp, "cache")


def objects(server, prefix="root/team/run/"):
    """Every key under `prefix` with its ETag."""
    s3, out = server.client(), {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=os.environ["SEXPGPU_TEST_BUCKET"], Prefix=prefix):
        for item in page.get("Contents", []):
            out[item["Key"][len(prefix):]] = item["ETag"].strip('"')
    return out


def expect_markers_whole(server, prefix="root/team/run/"):
    """Every completion marker names files that are there, with its ETags: nothing half
    written looks like a checkpoint. Returns the steps of the markers."""
    have = objects(server, prefix)
    s3, steps = server.client(), []
    for name in have:
        if not name.endswith(".complete"):
            continue
        body = s3.get_object(Bucket=os.environ["SEXPGPU_TEST_BUCKET"], Key=prefix + name)["Body"].read()
        marker, folder = json.loads(body), name[: -len(".complete")]
        for f in marker["files"]:
            expect(have.get(f"{folder}/{f['name']}") == f["etag"], f"{name} names {f['name']}, which is not as named")
        expect({"params.safetensors", "optimizer.safetensors", "experiment.json", "state.json"}
               <= {f["name"] for f in marker["files"]}, f"{name} lacks a file: {marker}")
        steps.append(marker["step"])
    return sorted(steps)


def params_at(server, step, prefix="root/team/run/"):
    key = f"{prefix}step-{step:08d}/params.safetensors"
    return server.client().get_object(Bucket=os.environ["SEXPGPU_TEST_BUCKET"], Key=key)["Body"].read()


def case_resume_and_serve(tmp):
    """The issue's "done when": run to o41://team/run on S3, killed, resumed to the unbroken
    run's bits; served and exported from the same location."""
    run_file = training_dir(tmp)
    unbroken = os.path.join(tmp, "unbroken")
    started = time.monotonic()
    train([run_file, "--checkpoint-dir", unbroken])
    # Kills land within a run however fast this build is (the sanitizer build's run is
    # not slower by its time scale, so a sleep scaled by it outlasted every run).
    run_seconds = time.monotonic() - started
    server = start_moto()
    try:
        use_storage(server, tmp)
        rng = random.Random(7)
        kills = 0
        for attempt in range(40):
            if 12 in expect_markers_whole(server):
                break
            proc = subprocess.Popen([e2e_test.SEXPGPU, "run", run_file, "--checkpoint-dir", LOCATION],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.1, 0.8) * run_seconds)
            kills += proc.poll() is None
            proc.kill()
            proc.wait()
        expect(kills > 0, "no run was killed before its end")
        out = train([run_file, "--checkpoint-dir", LOCATION])
        expect(expect_markers_whole(server)[-1] == 12, "the run reached step 12", out)
        with open(os.path.join(unbroken, "step-00000012", "params.safetensors"), "rb") as f:
            expect(params_at(server, 12) == f.read(), "the resumed run's bits differ from the unbroken run's")
        # The log is copied up before each checkpoint; the curve at the end of a run that
        # trained (this one may only have resumed a killed run's last checkpoint).
        metrics = server.client().get_object(Bucket=os.environ["SEXPGPU_TEST_BUCKET"],
                                             Key="root/team/run/metrics.jsonl")["Body"].read()
        with open(os.path.join(unbroken, "metrics.jsonl"), "rb") as f:
            want = f.read()
            expect(metrics == want, "metrics.jsonl beside the checkpoints is the unbroken run's",
                   metrics.decode(), want.decode())
        expect("loss.svg" in objects(server) or "trained " not in out, "loss.svg is kept beside them", out)
        print(f"ok: killed {kills} times, resumed, the unbroken run's bits")

        sock = os.path.join(tmp, "s.sock")
        served = serve_test.Server(LOCATION, sock)
        try:
            expect(served.first_line.startswith(f"serving {LOCATION}/step-00000012 on "),
                   "the newest checkpoint is served, named as the location was", served.first_line)
            client = serve_test.Client(sock)
            answer = client.call(serve_test.ids(1))
            expect(answer is not None and answer[0] == 0, "a call is answered")
            client.close()
        finally:
            served.stop()
        print("ok: served from", LOCATION)
        rc, out, err, _ = e2e_test.run(["export", run_file, "--checkpoint", LOCATION + "/step-00000009", "-o",
                                        os.path.join(tmp, "exported")])
        expect(rc == 0 and os.path.exists(os.path.join(tmp, "exported", "params.safetensors")), "export", out, err)
        print("ok: exported from", LOCATION + "/step-00000009")
    finally:
        server.stop()


class Proxy:
    """A TCP proxy in front of the server that can be cut off: after `cut_after` bytes
    sent to the server every connection is dropped and new ones refused, until restore()."""

    def __init__(self, port):
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sent, self.cut_after, self.down = 0, None, False
        self.lock = threading.Lock()
        self.open = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            conn, _ = self.listener.accept()
            if self.down:
                conn.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.open += [conn, upstream]
            threading.Thread(target=self.pump, args=(conn, upstream, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, conn, False), daemon=True).start()

    def pump(self, src, dst, counted):
        try:
            while data := src.recv(65536):
                if counted:
                    with self.lock:
                        self.sent += len(data)
                        if self.cut_after is not None and self.sent > self.cut_after:
                            self.cut()
                            return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self):
        self.down = True
        for s in self.open:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.open = []

    def restore(self):
        self.down, self.cut_after = False, None


def case_fault(tmp):
    """The server goes away mid-upload: the run stops with E-LOC-005 naming the location,
    nothing half written is taken for a checkpoint, and the run resumes once it is back
    to the unbroken run's bits. Cut at several points, so that some cut a file's upload."""
    run_file = training_dir(tmp)
    unbroken = os.path.join(tmp, "unbroken")
    train([run_file, "--checkpoint-dir", unbroken])
    with open(os.path.join(unbroken, "step-00000012", "params.safetensors"), "rb") as f:
        unbroken_params = f.read()
    server = start_moto()
    try:
        proxy = Proxy(server.port)
        use_storage(server, tmp, f"http://127.0.0.1:{proxy.port}")
        # The bytes a whole run sends, measured on a location of its own.
        train([run_file, "--checkpoint-dir", "o41://team/measure"])
        whole, cut_files = proxy.sent, 0
        for i, fraction in enumerate([0.3, 0.45, 0.6, 0.75, 0.9]):
            location, prefix = f"o41://team/run{i}", f"root/team/run{i}/"
            proxy.sent, proxy.cut_after = 0, int(whole * fraction)
            expect_error(["run", run_file, "--checkpoint-dir", location], "E-LOC-005",
                         mentions=(f"127.0.0.1:{proxy.port}", "s3://"))
            steps = expect_markers_whole(server, prefix)
            expect(not steps or steps[-1] < 12, f"the cut run stopped before its end: markers of {steps}")
            unmarked = {n.split("/")[0] for n in objects(server, prefix) if n.startswith("step-") and "/" in n}
            unmarked -= {f"step-{s:08d}" for s in steps}
            cut_files += bool(unmarked)
            print(f"ok: cut after {proxy.cut_after} of {whole} bytes: whole checkpoints {steps}, "
                  f"files without a marker in {sorted(unmarked)}")
            proxy.restore()
            out = train([run_file, "--checkpoint-dir", location])
            if steps:
                expect("resuming" in out and f"step-{steps[-1]:08d}" in out, "the run resumes from its newest", out)
            expect(expect_markers_whole(server, prefix)[-1] == 12, "the resumed run reached step 12", out)
            expect(params_at(server, 12, prefix) == unbroken_params, "the resumed run's bits differ from the unbroken")
            leftover = {n for n in objects(server, prefix) if n.startswith(".step-")}
            expect(not leftover, f"the cut upload's temporaries are cleared: {sorted(leftover)}")
        expect(cut_files > 0, "no cut fell inside a checkpoint's files")
        print("ok: resumed each time the server was back, the unbroken run's bits")
    finally:
        server.stop()


def case_frozen_load(tmp):
    """A frozen :load parameter read from s3://: check and explain read it, a run records
    its ETag, serve reads it again, and once the object is replaced serve and export
    refuse with E-LOAD-001 naming it."""
    server = start_moto()
    try:
        use_storage(server, tmp)
        bucket = os.environ["SEXPGPU_TEST_BUCKET"]
        pos = os.path.join(tmp, "pos.safetensors")
        e2e_test.write_safetensors(pos, {"pos": ([8, 16], [((k * 37) % 19 - 9) / 50 for k in range(128)])})
        server.client().upload_file(pos, bucket, "weights/pos.safetensors")
        url = f"s3://{bucket}/weights/pos.safetensors"
        text = e2e_test.TRAIN_FILE.replace(
            b"(defparam positions (normal [8 dim] :std 0.02))",
            b'(defparam positions (zeros [8 dim]) :trainable false :load ["' + url.encode() + b'" "pos"])')
        run_file = training_dir(tmp, "frozen.sx", text)
        for command in (["check", run_file], ["explain", run_file]):
            rc, out, err, _ = e2e_test.run(command)
            expect(rc == 0, f"sexpgpu {command[0]} of a file loading from S3", out, err)
        location = os.path.join(tmp, "run")
        train([run_file, "--checkpoint-dir", location, "--steps", "3"])
        with open(os.path.join(location, "step-00000003", "experiment.json")) as f:
            files = json.load(f)["loads"]["files"]
        expect(files and files[0]["file"] == url and files[0].get("etag") and "sha256" not in files[0],
               f"the checkpoint records the object's ETag: {files}")
        sock = os.path.join(tmp, "s.sock")
        served = serve_test.Server(location, sock)
        try:
            expect(serve_test.Client(sock).call(serve_test.ids(1))[0] == 0, "the checkpoint answers")
        finally:
            served.stop()
        e2e_test.write_safetensors(pos, {"pos": ([8, 16], [0.5] * 128)})
        server.client().upload_file(pos, bucket, "weights/pos.safetensors")
        expect_error(["serve", location, "--socket", sock], "E-LOAD-001", mentions=(url, "ETag"))
        expect_error(["export", run_file, "--checkpoint", location, "-o", os.path.join(tmp, "x")], "E-LOAD-001",
                     mentions=(url,))
    finally:
        server.stop()


def case_data_loader(tmp):
    """A run whose :data reads s3://BUCKET/data/input.txt: `check` downloads it once into
    the cache (it compiles the training step, which needs the loader's fields) and the run
    reads that copy, training to the bits of the same run on the local file; a missing
    object is E-LOC-004 naming its URL."""
    run_file = training_dir(tmp)
    local = os.path.join(tmp, "local")
    train([run_file, "--checkpoint-dir", local])
    server = start_moto()
    try:
        use_storage(server, tmp)
        bucket = os.environ["SEXPGPU_TEST_BUCKET"]
        url = f"s3://{bucket}/data/input.txt"
        server.client().upload_file(os.path.join(tmp, "text.txt"), bucket, "data/input.txt")
        text = e2e_test.TRAIN_FILE.replace(b'"text.txt"', b'"' + url.encode() + b'"')
        s3_file = training_dir(tmp, "s3-data.sx", text)
        rc, out, err, _ = e2e_test.run(["check", s3_file])
        expect(rc == 0, "sexpgpu check of a run reading its data from S3", out, err)
        cache = os.path.join(tmp, "cache", "objects")

        def copies():
            return [os.path.join(d, f) for d, _, files in os.walk(cache) for f in files]

        checked = copies()
        expect(len(checked) == 1 and checked[0].endswith("/input.txt"), f"check left one copy: {checked}")
        downloaded = os.stat(checked[0]).st_ino
        trained = os.path.join(tmp, "trained")
        train([s3_file, "--checkpoint-dir", trained])
        expect(copies() == checked and os.stat(checked[0]).st_ino == downloaded,
               f"the run reads check's copy, not a second download: {copies()}")
        for name in ("params.safetensors", "optimizer.safetensors"):
            with open(os.path.join(local, "step-00000012", name), "rb") as a, \
                    open(os.path.join(trained, "step-00000012", name), "rb") as b:
                expect(a.read() == b.read(), f"{name} differs from the run on the local file")
        print("ok: trained on", url, "to the local run's bits")

        missing = text.replace(b"data/input.txt", b"data/absent.txt")
        missing_file = training_dir(tmp, "missing.sx", missing)
        for command in (["check", missing_file], ["run", missing_file, "--checkpoint-dir", os.path.join(tmp, "m")]):
            expect_error(command, "E-LOC-004", mentions=(f"s3://{bucket}/data/absent.txt",))
        print("ok: a missing object is E-LOC-004")
    finally:
        server.stop()


def case_https(tmp):
    """An https:// endpoint with a private certificate (moto's, self-signed for
    127.0.0.1): trusted through AWS_CA_BUNDLE, a run writes its checkpoints there and they
    are listed and served; without it, or with a CA file that is not there, the run stops
    with E-LOC-005 naming the certificate problem and the URL, never the secret."""
    run_file = training_dir(tmp)
    server = start_moto(https=True)
    try:
        use_storage(server, tmp)
        expect(server.endpoint.startswith("https://") and os.environ.get("AWS_CA_BUNDLE") == server.certificate,
               "the run trusts the server's certificate through AWS_CA_BUNDLE")
        train([run_file, "--checkpoint-dir", LOCATION])
        expect(expect_markers_whole(server)[-1] == 12, "the run's checkpoints are on the https:// server")
        sock = os.path.join(tmp, "s.sock")
        served = serve_test.Server(LOCATION, sock)
        try:
            expect(served.first_line.startswith(f"serving {LOCATION}/step-00000012 on "),
                   "the newest checkpoint is served", served.first_line)
        finally:
            served.stop()
        print("ok: checkpoints written, listed and served over https:// with AWS_CA_BUNDLE")

        del os.environ["AWS_CA_BUNDLE"]
        for bundle in (None, os.path.join(tmp, "no-such-ca.pem")):
            if bundle:
                os.environ["AWS_CA_BUNDLE"] = bundle
            rc, out, err, _ = e2e_test.run(["run", run_file, "--checkpoint-dir", "o41://team/other"])
            expect(rc == 1 and "error[E-LOC-005]" in err, "an untrusted certificate is E-LOC-005", out, err)
            for text in (server.endpoint, "s3://", bundle or "certificate", bundle or "AWS_CA_BUNDLE"):
                expect(text in err, f"the error names {text!r}", err)
            expect("testing-secret" not in err, "the error never shows the secret", err)
            print("ok: AWS_CA_BUNDLE", "unset" if bundle is None else "a missing file", "-> E-LOC-005")
    finally:
        server.stop()


def case_named_as_written(tmp):
    """A checkpoint read through the local cache is named as the location was written, with
    its step folder: export's and evaluate's first lines, serve's banner and handshake, a
    resumed run's line and a refusal naming the checkpoint; never the cache's copy."""
    run_file = training_dir(tmp)
    server = start_moto()
    try:
        use_storage(server, tmp)
        cache = os.path.join(tmp, "cache")
        location = f"s3://{os.environ['SEXPGPU_TEST_BUCKET']}/run"
        train([run_file, "--checkpoint-dir", location])
        expect(os.path.isdir(cache), "the run used the cache")

        def expect_named(what, text, named):
            expect(named in text and cache not in text, f"{what} names {named}, not the cache", text)

        rc, out, err, _ = e2e_test.run(["export", run_file, "--checkpoint", location, "-o",
                                        os.path.join(tmp, "exported")])
        expect(rc == 0, "export from s3://", out, err)
        expect(out.splitlines()[0] == f"export: {location}/step-00000012", "export's first line", out, err)
        expect_named("export", out + err, f"{location}/step-00000012")
        rc, out, err, _ = e2e_test.run(["evaluate", run_file, "--checkpoint", location + "/step-00000009/"])
        expect(rc == 0 and out.startswith(f"{location}/step-00000009, the :ema averages\n"), "evaluate's first line",
               out, err)
        expect_named("evaluate", out + err, f"{location}/step-00000009")

        sock = os.path.join(tmp, "s.sock")
        served = serve_test.Server(location, sock)
        try:
            expect(served.first_line.startswith(f"serving {location}/step-00000012 on "), "serve's banner",
                   served.first_line)
            client = serve_test.Client(sock)
            expect(client.about["checkpoint"] == f"{location}/step-00000012", f"the handshake: {client.about}")
            client.close()
        finally:
            served.stop()

        train([run_file, "--checkpoint-dir", LOCATION])
        out = train([run_file, "--checkpoint-dir", LOCATION, "--steps", "15"])
        # Its last line names the local loss curve, which is no checkpoint.
        resumed = out.splitlines()[0]
        expect(resumed.endswith(f" from {LOCATION}/step-00000012 (step 12 of 15)"), "the resumed run's line", out)

        wider = training_dir(tmp, "wider.sx", e2e_test.TRAIN_FILE.replace(b"(tiny 256 16)", b"(tiny 256 32)"))
        rc, out, err, _ = e2e_test.run(["export", wider, "--checkpoint", location, "-o", os.path.join(tmp, "x")])
        expect(rc == 1 and "error[E-CKPT-006]" in err, "a file of other parameters is refused", out, err)
        expect_named("export's refusal", err, f"the checkpoint {location}/step-00000012")
        print("ok: export, evaluate, serve, resume and refusals name", location, "as written")
    finally:
        server.stop()


def case_counters_resumed(tmp):
    """`(counter ...)` totals go on across a resume from storage, as from a local folder:
    resumed from step 6 on o41://, the run's step 12 has counted every step's rows."""
    text = e2e_test.TRAIN_FILE.replace(b"(defun loss (logits prepared)\n",
                                       b"(defun loss (logits prepared)\n  (counter :rows 4)\n")
    run_file = training_dir(tmp, "counted.sx", text)
    server = start_moto()
    try:
        use_storage(server, tmp)
        train([run_file, "--checkpoint-dir", LOCATION, "--steps", "6"])
        out = train([run_file, "--checkpoint-dir", LOCATION])
        expect("resuming" in out, "the second run resumes", out)
        body = server.client().get_object(Bucket=os.environ["SEXPGPU_TEST_BUCKET"],
                                          Key="root/team/run/step-00000012/state.json")["Body"].read()
        counters = json.loads(body).get("counters")
        expect(counters == {"rows": 48}, f"12 steps of 4 rows counted across the resume: {counters}")
        print("ok: counters kept across a resume from", LOCATION)
    finally:
        server.stop()


def enforce_credentials(server):
    """From now on moto checks each request's signature against the secrets of its IAM
    users: makes one allowed every s3 action, and returns its (key id, secret)."""
    import boto3
    iam = boto3.client("iam", endpoint_url=server.endpoint, region_name="us-east-1", aws_access_key_id="testing",
                       aws_secret_access_key="testing-secret")
    iam.create_user(UserName="runner")
    iam.put_user_policy(UserName="runner", PolicyName="s3", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName="runner")["AccessKey"]
    # A plain body: a form's content type leaves moto reading none.
    urllib.request.urlopen(urllib.request.Request(server.endpoint + "/moto-api/reset-auth", data=b"0",
                                                  headers={"Content-Type": "text/plain"})).read()
    return key["AccessKeyId"], key["SecretAccessKey"]


def case_credentials_refused(tmp):
    """A wrong secret or an unknown key id is E-LOC-003 naming the HTTP status and S3's
    error code (SignatureDoesNotMatch, InvalidAccessKeyId), what a user searches for; also
    where the first request is a HEAD, whose answer has no body; never the secret."""
    run_file = training_dir(tmp)
    server = start_moto()
    try:
        use_storage(server, tmp)
        train([run_file, "--checkpoint-dir", LOCATION, "--steps", "3"])
        key_id, secret = enforce_credentials(server)
        os.environ.update(AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret)
        rc, out, err, _ = e2e_test.run(["export", run_file, "--checkpoint", LOCATION + "/step-00000003", "-o",
                                        os.path.join(tmp, "exported")])
        expect(rc == 0, "the right secret is taken: requests are signed as moto checks them", out, err)
        wrong = "not-the-secret-" + secret[:8]
        os.environ["AWS_SECRET_ACCESS_KEY"] = wrong
        export = ["export", run_file, "--checkpoint", LOCATION + "/step-00000003", "-o", os.path.join(tmp, "x")]
        for command in (["run", run_file, "--checkpoint-dir", LOCATION], export):
            expect_error(command, "E-LOC-003", mentions=("(HTTP 403, SignatureDoesNotMatch: ", server.endpoint, "s3://"))
            _, _, err, _ = e2e_test.run(command)
            expect(wrong not in err and secret not in err, "the error never shows a secret", err)
        os.environ.update(AWS_ACCESS_KEY_ID="AKIANOSUCHKEY0000000", AWS_SECRET_ACCESS_KEY=secret)
        for command in (["run", run_file, "--checkpoint-dir", LOCATION], export):
            expect_error(command, "E-LOC-003", mentions=("(HTTP 403, InvalidAccessKeyId: ",))
    finally:
        server.stop()


def case_refusals(tmp):
    """o41:// without its root; a bucket that does not exist; a server that is down."""
    run_file = training_dir(tmp)
    os.environ.pop("SEXPGPU_O41_ROOT", None)
    expect_error(["run", run_file, "--checkpoint-dir", LOCATION], "E-LOC-002", mentions=("SEXPGPU_O41_ROOT",))
    expect_error(["serve", "s3://Bad_Bucket/x", "--socket", os.path.join(tmp, "s.sock")], "E-LOC-001",
                 mentions=("s3://Bad_Bucket/x",))
    server = start_moto()
    try:
        use_storage(server, tmp)
        expect_error(["run", run_file, "--checkpoint-dir", "s3://no-such-bucket-here/run"], "E-LOC-004",
                     mentions=("no-such-bucket-here", "(HTTP 404, NoSuchBucket: "))
        expect_error(["serve", LOCATION, "--socket", os.path.join(tmp, "s.sock")], "E-CKPT-003",
                     mentions=(LOCATION,))
        os.environ["AWS_SECRET_ACCESS_KEY"] = ""
        expect_error(["run", run_file, "--checkpoint-dir", LOCATION], "E-LOC-003",
                     mentions=("AWS_SECRET_ACCESS_KEY",))
    finally:
        server.stop()
    use_storage(server, tmp)
    expect_error(["run", run_file, "--checkpoint-dir", LOCATION], "E-LOC-005", within=30,
                 mentions=(server.endpoint,))


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "storage"))
