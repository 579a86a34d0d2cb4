"""The embedding model of memory search (``AGUI_EMBEDDING_MODEL``), as a pydantic-ai ``Embedder``.

- empty: none; memory search ranks by text alone.
- ``hash`` or ``hash:<dimensions>`` (default 256): ``HashingEmbeddingModel``, offline and deterministic —
  feature hashing of words and their character 4-grams, so texts sharing words or word parts are
  near. No download, no network: what the tests and the benchmark use, and a fair default for a
  machine without a provider.
- anything else: a pydantic-ai embedding model id (``openai:text-embedding-3-small``,
  ``sentence-transformers:all-MiniLM-L6-v2`` …), whose provider reads its own API key variables.

Vectors are stored unit length (``unit``), so cosine similarity is a dot product. The model's ``name``
is stored with each vector: items embedded by another model are never compared with this one's.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from pydantic_ai import Embedder
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType
from pydantic_ai.usage import RequestUsage

HASH_MODEL = "hash"
DEFAULT_HASH_DIMENSIONS = 256
MAX_HASH_DIMENSIONS = 4096
WORD = re.compile(r"[^\W_]+")


class HashingEmbeddingModel(EmbeddingModel):
    """Deterministic embeddings by feature hashing (signed; words weigh 1, their 4-grams 0.5), unit length."""

    def __init__(self, dimensions: int = DEFAULT_HASH_DIMENSIONS) -> None:
        super().__init__()
        self.dimensions = dimensions

    @property
    def model_name(self) -> str:
        return f"{HASH_MODEL}:{self.dimensions}"

    @property
    def system(self) -> str:
        return "agui-hub"

    def vector(self, text: str) -> list[float]:
        values = [0.0] * self.dimensions
        for word in WORD.findall(text.casefold()):
            features = [(word, 1.0)]
            padded = f"^{word}$"
            features += [(padded[i : i + 4], 0.5) for i in range(len(padded) - 3)]
            for feature, weight in features:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self.dimensions
                values[index] += weight if digest[4] & 1 else -weight
        return unit(values)

    async def embed(
        self,
        inputs: str | Sequence[str],
        *,
        input_type: EmbedInputType,
        settings: EmbeddingSettings | None = None,
    ) -> EmbeddingResult:
        texts, _ = self.prepare_embed(inputs, settings)
        return EmbeddingResult(
            embeddings=[self.vector(text) for text in texts],
            inputs=texts,
            input_type=input_type,
            usage=RequestUsage(),
            model_name=self.model_name,
            provider_name=self.system,
            provider_response_id=str(uuid.uuid4()),
        )


def unit(values: Sequence[float]) -> list[float]:
    """``values`` scaled to length 1 (all zeros stay zeros)."""
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values] if norm else [0.0 for _ in values]


@dataclass(frozen=True)
class MemoryEmbedder:
    """The configured embedder and the name stored with its vectors."""

    embedder: Embedder
    name: str


@functools.cache
def _embedder_for(model_id: str) -> MemoryEmbedder | None:
    if not model_id:
        return None
    kind, _, size = model_id.partition(":")
    if kind == HASH_MODEL:
        dimensions = int(size) if size.isdigit() else DEFAULT_HASH_DIMENSIONS
        model = HashingEmbeddingModel(max(8, min(dimensions, MAX_HASH_DIMENSIONS)))
        return MemoryEmbedder(Embedder(model), model.model_name)
    return MemoryEmbedder(Embedder(model_id), model_id)


def memory_embedder() -> MemoryEmbedder | None:
    """The embedder ``AGUI_EMBEDDING_MODEL`` names (one per process and setting), or ``None``."""
    return _embedder_for(settings.AGUI_EMBEDDING_MODEL.strip())
