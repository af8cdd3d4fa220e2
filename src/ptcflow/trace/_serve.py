"""``ptcflow serve --example``: run the example agent service of ``examples/service/``."""

from __future__ import annotations

import gc
import importlib
import sys
from pathlib import Path

__all__ = ("find_example", "serve_example")


def find_example() -> Path | None:
    """The ``examples/service`` folder: under the current directory, or in the source
    checkout ptcflow runs from (an editable install). ``None`` when neither has it."""
    here = Path(__file__).resolve()
    for root in (Path.cwd(), *here.parents):
        folder = root / "examples" / "service"
        if (folder / "service_app.py").is_file():
            return folder
    return None


def serve_example(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    latency_ms: float = 400.0,
    data_dir: str | None = None,
) -> int:
    """Serve the example app with uvicorn until interrupted; return an exit code. Blocks.

    What ``ptcflow serve --example`` runs: it needs a checkout of the repository
    (``examples/service/``, see :func:`find_example`) and the ``service`` extra. The
    command line's plumbing, not an API to build a service on (the example's
    ``service_app.py`` shows how to). ``data_dir``: where the example keeps its
    conversations (default: its ``default_data_dir()``).
    """
    folder = find_example()
    if folder is None:
        print(
            "ptcflow serve: the example lives in the repository's examples/service/; run this "
            "from a checkout of ptcflow (or from its root directory)",
            file=sys.stderr,
        )
        return 2
    try:
        import uvicorn
    except ImportError:
        print(
            "ptcflow serve: needs the service extra: pip install 'ptcflow[service]'",
            file=sys.stderr,
        )
        return 2
    sys.path.insert(0, str(folder))
    app_module = importlib.import_module("service_app")
    app = app_module.create_app(latency=latency_ms / 1000.0, data_dir=data_dir)
    print(f"ptcflow example service on http://{host}:{port} (Ctrl-C stops it)", flush=True)
    # what is alive now (the modules, the app) is never scanned by the collector again,
    # and full collections (100-250 ms with a thousand streams open, no client served
    # meanwhile) come rarely: docs/streaming.md, "Serving many clients"
    gc.set_threshold(2000, 10, 1000)
    gc.collect()
    gc.freeze()
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0
