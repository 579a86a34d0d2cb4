"""Reading an uploaded bundle of skill files: ``.md`` files, and the ``.md`` members of ``.zip`` files.

Shared by the admin import and ``POST /api/v1/skills/import``, with the same limits: at most
``AGUI_SKILL_IMPORT_MAX_FILES`` files, ``AGUI_SKILL_IMPORT_MAX_BYTES`` uncompressed and no member
compressed more than ``AGUI_SKILL_IMPORT_MAX_RATIO``:1 (both checked from the zip directory before
anything is inflated; zipfile stops at a member's declared size).
"""

from __future__ import annotations

import zipfile
from pathlib import PurePosixPath
from typing import Protocol

from django.conf import settings


class Upload(Protocol):
    """An uploaded file, readable and seekable (Django's ``UploadedFile`` is one)."""

    name: str | None

    def read(self, size: int = -1) -> bytes: ...

    def seek(self, offset: int, whence: int = 0) -> int: ...

    def tell(self) -> int: ...


class BundleUnreadable(ValueError):
    """Uploaded files that cannot be read as a bundle of skill files; ``problems`` says which and why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def read_bundle(uploads: list[Upload]) -> tuple[dict[str, str], list[str]]:
    """The skill files among ``uploads`` (``.md`` files, and the ``.md`` members of ``.zip`` files).

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
                        if (
                            path.suffix.lower() != ".md"
                            or path.name.startswith(".")
                            or "__MACOSX" in path.parts
                        ):
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
