"""Reading an uploaded bundle of skill files: ``.md`` files, and the ``.md`` members of ``.zip`` files.

Shared by the admin import and ``POST /api/v1/skills/import``, with the same limits: at most
``AGUI_SKILL_IMPORT_MAX_FILES`` files, ``AGUI_SKILL_IMPORT_MAX_BYTES`` uncompressed and no member
compressed more than ``AGUI_SKILL_IMPORT_MAX_RATIO``:1 (both checked from the zip directory before
anything is inflated; zipfile stops at a member's declared size).

A member's name must be a plain relative path (``refunds.md``, or ``pdf-forms/scripts/fill.py`` in an
Agent Skills folder): no ``..`` or ``.`` part, no empty part, no leading ``/``, no drive letter, no
backslash, no control character (``member_name_problem``). Names become skill file names and resource
paths that ``read_skill_resource`` serves, so a zip with one such name is refused whole.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import PurePosixPath
from typing import Protocol

from django.conf import settings

from capabilities.skills.agent_skills import SKILL_FILE

DRIVE = re.compile(r"[A-Za-z]:")


class Upload(Protocol):
    """An uploaded file, readable and seekable (Django's ``UploadedFile`` is one)."""

    name: str | None

    def read(self, size: int = -1) -> bytes: ...

    def seek(self, offset: int, whence: int = 0) -> int: ...

    def tell(self) -> int: ...


def member_name_problem(name: str) -> str | None:
    """Why ``name`` is not a plain relative path inside a bundle, or ``None``."""
    if not name:
        return "an empty name"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in name):
        return "a control character in the name"
    if "\\" in name:
        return "a backslash in the name (use / between folders)"
    if name.startswith("/") or DRIVE.match(name):
        return "an absolute path"
    parts = name.removesuffix("/").split("/")  # a folder's entry ends with "/"
    if any(part in ("", ".", "..") for part in parts):
        return "a '..', '.' or empty part in the path"
    return None


class BundleUnreadable(ValueError):
    """Uploaded files that cannot be read as a bundle of skill files; ``problems`` says which and why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def read_bundle(
    uploads: list[Upload], *, resources: dict[str, str] | None = None
) -> tuple[dict[str, str], list[str]]:
    """The skill files among ``uploads`` (``.md`` files, and the ``.md`` members of ``.zip`` files).

    ``resources``: when given, the other members of a zip that holds an Agent Skills folder (a
    ``SKILL.md``) are read into it (member name → text) instead of skipped — text files only, at most
    ``AGUI_SKILL_RESOURCE_MAX_BYTES`` each; they count towards the upload's byte limit.

    Returns (filename → source, names of skipped zip members). Raises:
        BundleUnreadable: a file is not .md/.zip, not UTF-8, a broken zip, a name used twice, or too much.
    """
    files: dict[str, str] = {}
    skipped: list[str] = []
    problems: list[str] = []
    total = 0

    def add(name: str, data: bytes) -> None:
        nonlocal total
        total += len(data)
        if name in files:
            problems.append(f"{name}: the bundle contains this file name twice")
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{name}: not UTF-8 text (byte {exc.start})")
            return
        if "\x00" in text:
            problems.append(f"{name}: contains the NUL character (U+0000), which cannot be stored")
            return
        files[name] = text

    for upload in uploads:
        name = upload.name or "upload"
        suffix = PurePosixPath(name).suffix.lower()
        if suffix == ".md":
            add(name, upload.read())
        elif suffix == ".zip":
            try:
                with zipfile.ZipFile(upload) as archive:
                    unsafe = [
                        f"{name}/{m.filename}: not a plain relative path ({problem}); nothing was imported"
                        for m in archive.infolist()
                        if (problem := member_name_problem(m.filename)) is not None
                    ]
                    if unsafe:
                        raise BundleUnreadable(unsafe[:20])
                    members = [m for m in archive.infolist() if not m.is_dir()]
                    if len(members) > 2 * settings.AGUI_SKILL_IMPORT_MAX_FILES:
                        raise BundleUnreadable([f"{name}: {len(members)} entries; too many to import"])
                    # Declared sizes bound what inflating costs: zipfile stops (and fails the CRC)
                    # at a member's declared size, so a lying header cannot inflate further.
                    if sum(m.file_size for m in members) + total > settings.AGUI_SKILL_IMPORT_MAX_BYTES:
                        raise BundleUnreadable(
                            [f"{name}: more than {settings.AGUI_SKILL_IMPORT_MAX_BYTES} bytes uncompressed"]
                        )
                    ratio = settings.AGUI_SKILL_IMPORT_MAX_RATIO
                    for member in members:
                        if member.file_size > 1024 and member.file_size > ratio * max(
                            member.compress_size, 1
                        ):
                            raise BundleUnreadable(
                                [f"{name}/{member.filename}: compressed more than {ratio}:1 (a zip bomb?)"]
                            )
                    for member in members:
                        path = PurePosixPath(member.filename)
                        hidden = path.name.startswith(".") or "__MACOSX" in path.parts
                        if not hidden and resources is not None and path.suffix.lower() != ".md":
                            if any(m.filename.endswith(SKILL_FILE) for m in members):
                                if (problem := add_resource(resources, member, archive)) is not None:
                                    skipped.append(f"{name}/{member.filename} ({problem})")
                                continue
                        if path.suffix.lower() != ".md" or hidden:
                            skipped.append(f"{name}/{member.filename}")
                            continue
                        add(member.filename, archive.read(member))
            except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
                problems.append(f"{name}: not a readable zip file ({exc})")
        else:
            problems.append(f"{name}: only .md files and .zip archives of them can be imported")
        if total > settings.AGUI_SKILL_IMPORT_MAX_BYTES:
            raise BundleUnreadable(
                [f"the upload is larger than {settings.AGUI_SKILL_IMPORT_MAX_BYTES} bytes"]
            )
    if len(files) > settings.AGUI_SKILL_IMPORT_MAX_FILES:
        problems.append(
            f"{len(files)} files; at most {settings.AGUI_SKILL_IMPORT_MAX_FILES} can be imported at once"
        )
    if not files and not problems:
        problems.append("no .md files found in the upload")
    if problems:
        raise BundleUnreadable(problems)
    return files, skipped


def add_resource(resources: dict[str, str], member: zipfile.ZipInfo, archive: zipfile.ZipFile) -> str | None:
    """Read one resource member into ``resources``; returns why it was left out, or None."""
    if member.file_size > settings.AGUI_SKILL_RESOURCE_MAX_BYTES:
        return f"larger than {settings.AGUI_SKILL_RESOURCE_MAX_BYTES} bytes"
    data = archive.read(member)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text; only text resources are imported"
    if "\x00" in text:
        return "binary; only text resources are imported"
    resources[member.filename] = text
    return None
