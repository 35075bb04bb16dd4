"""Starts `schemaweaver serve` on a free loopback port for the server benchmarks and tests."""
import contextlib
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(cli, model, *options, quiet=True, startup_seconds=120, stderr_path=None):
    """Yields (process, base URL, port) once /health answers; stops the server afterwards. Its
    stderr (the access log) goes to `stderr_path` if given, else nowhere if `quiet`."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    stderr = open(stderr_path, "w") if stderr_path else subprocess.DEVNULL if quiet else None
    server = subprocess.Popen([str(cli), "serve", "-m", str(model), "--port", str(port), *map(str, options)],
                              stderr=stderr)
    try:
        deadline = time.time() + startup_seconds
        while True:
            try:
                with urllib.request.urlopen(base + "/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.time() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        yield server, base, port
    finally:
        server.terminate()
        server.wait(timeout=30)
        if stderr_path:
            stderr.close()


def http(base, method, path, body=None, headers=None):
    """(status, body text) of a raw request."""
    request = urllib.request.Request(base + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(base, name):
    _, text = http(base, "GET", "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"metric {name} missing:\n{text}")
