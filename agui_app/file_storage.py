"""The S3 storage of files (``AGUI_FILES_STORAGE=s3``): django-storages' ``S3Storage``, except that a
received upload — a file on local disk, ``temporary_file_path()`` — is sent by its path
(``upload_file``), so s3transfer reads each part from the disk as it sends it instead of buffering
the parts of a file object in memory."""

from __future__ import annotations

from typing import Any

from storages.backends.s3 import S3Storage
from storages.utils import clean_name


class S3FileStorage(S3Storage):
    def _save(self, name: str, content: Any) -> str:
        path = getattr(content, "temporary_file_path", None)
        if path is None or self.gzip:
            return str(super()._save(name, content))
        cleaned = clean_name(name)
        key = self._normalize_name(cleaned)
        params = self._get_write_parameters(key, content)
        self.bucket.Object(key).upload_file(path(), ExtraArgs=params, Config=self.transfer_config)
        return str(cleaned)
