"""Skills as tests build them: real zips (`zipfile`), directory uploads as the client's file tuples, and the
inline form of an environment's skill."""

from __future__ import annotations

import base64
import io
import zipfile
from typing import Any


def skill_md(name: str, description: str, body: str = "Run `scripts/hello.sh`.") -> str:
    return f"---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\n# {name}\n\n{body}\n"


def skill_files(name: str, description: str, greeting: str = "hello") -> dict[str, bytes]:
    """A skill directory: SKILL.md and a script that prints `greeting`."""
    return {
        "SKILL.md": skill_md(name, description).encode(),
        "scripts/hello.sh": f"#!/bin/sh\necho {greeting} from {name}\n".encode(),
        "reference/notes.txt": b"only read when needed\n",
    }


def zip_of(files: dict[str, bytes], top: str | None = None, executable: tuple[str, ...] = ("scripts/hello.sh",)) -> bytes:
    """A zip of `files`, under the directory `top` if given; `executable` entries get mode 0755."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(f"{top}/{path}" if top else path)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100755 if path in executable else 0o100644) << 16
            z.writestr(info, data)
    return buf.getvalue()


def upload_list(files: dict[str, bytes], top: str) -> list[tuple[str, bytes]]:
    """A directory upload: each file named by its path under `top`."""
    return [(f"{top}/{path}", data) for path, data in files.items()]


def inline_skill(name: str, description: str, data: bytes) -> dict[str, Any]:
    return {
        "type": "inline",
        "name": name,
        "description": description,
        "source": {"type": "base64", "media_type": "application/zip", "data": base64.b64encode(data).decode()},
    }


def symlink_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("SKILL.md", skill_md("linked", "Has a link."))
        info = zipfile.ZipInfo("escape")
        info.external_attr = 0o120777 << 16
        z.writestr(info, "/etc/passwd")
    return buf.getvalue()


def escaping_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("SKILL.md", skill_md("escaper", "Writes outside."))
        z.writestr("../../outside.sh", "echo out")
    return buf.getvalue()


def bomb_zip(megabytes: int = 65) -> bytes:
    """A small zip whose one file unpacks to `megabytes` MiB of zeros."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("SKILL.md", skill_md("bomb", "Too big."))
        with z.open("zeros.bin", "w", force_zip64=True) as f:
            chunk = bytes(1 << 20)
            for _ in range(megabytes):
                f.write(chunk)
    return buf.getvalue()
