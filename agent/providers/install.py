"""The command that adds the embedded model's ``local`` extra to this installation of Kiln."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import urllib.parse
from typing import Any

# llama-cpp-python compiles for the CPU it builds on unless told otherwise; such a build crashed
# (SIGSEGV in llama_decode) on virtual CPUs, so every install command Kiln prints builds portable.
PORTABLE = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" '


def install_hint() -> str:
    """How to add the ``local`` extra to this installation. From a checkout (an editable
    install, as the README's quick start makes), pip must be pointed at the checkout:
    ``pip install 'kiln-agent[local]'`` would look the name up on the package index instead and
    fail, or install whatever else carries that name there."""
    info = install_record()
    if not (isinstance(info, dict) and (info.get("dir_info") or {}).get("editable")):
        return PORTABLE + "pip install 'kiln-agent[local]'"
    url = urllib.parse.urlparse(str(info.get("url") or ""))
    checkout = urllib.parse.unquote(url.path) if url.scheme == "file" else ""
    if checkout and os.path.isdir(checkout):
        return f"{PORTABLE}pip install -e {shlex.quote(checkout + '[local]')}"
    return PORTABLE + "pip install -e '.[local]' in the Kiln checkout"


def install_record() -> dict[str, Any]:
    """pip's record of how Kiln was installed (``direct_url.json``), {} when there is none.
    Every distribution of the name is asked: run from the checkout (pytest, ``python -m``), the
    checkout's own ``kiln_agent.egg-info``, which has no record, comes first on the path and hid
    the installed one."""
    for dist in importlib.metadata.distributions(name="kiln-agent"):
        try:
            info = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:
            continue
        if isinstance(info, dict) and info:
            return info
    return {}
