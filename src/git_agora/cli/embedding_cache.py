"""Embeddings for the contributions in the index: cached by (sha, model), computed only when missing."""

from __future__ import annotations

import click

HASHING = "hashing"


def backend_for(model: str | None):
    """The encoder to use: a named model, the lexical fallback (`hashing`), or the default MiniLM."""
    import os

    from ..frontier.embeddings import hashing_backend, load_backend

    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    if model == HASHING:
        from dataclasses import replace

        return replace(hashing_backend(reason="chosen"), notice=None)
    try:
        return load_backend(model)
    except Exception as exc:  # a model that is missing or broken: say so once, fall back
        return hashing_backend(reason=f"embedding model {model or 'all-MiniLM-L6-v2'} unavailable ({exc})")


def cached_embeddings(project, index, model_option: str | None):
    """The embedding table with every valid contribution embedded by the chosen model, and its id.

    The model is loaded only when some contribution lacks a cached vector; a fallback is reported on
    stderr in one line; a progress bar shows when there are many to compute.
    """
    import pyarrow.compute as pc

    from ..frontier.embeddings import DEFAULT_MODEL, embed_missing, texts_by_sha
    from ..index.store import read_embeddings, write_embeddings

    cache = read_embeddings(project.repo)
    model = model_option or index.config.sections.get("embeddings", {}).get("model")
    wanted = _hashing_model_id() if model == HASHING else (model or DEFAULT_MODEL)
    valid = index.contributions.filter(index.contributions["valid"])
    if cache is not None:
        have = cache["sha"].filter(pc.equal(cache["model"], wanted))  # never touch the vectors here
        valid = valid.filter(pc.invert(pc.is_in(valid["sha"], value_set=have)))
    if valid.num_rows == 0:
        return cache, wanted
    texts = texts_by_sha(valid)
    backend = backend_for(model)
    if backend.notice:
        click.echo(f"git agora: note: {backend.notice}", err=True)
    updated = _embed_with_progress(embed_missing, texts, cache, backend)
    write_embeddings(project.repo, updated)
    return updated, backend.model


def _hashing_model_id() -> str:
    """The id the hashing fallback caches under, without importing scikit-learn."""
    import importlib.util

    from ..frontier.embeddings import HASHING_NUMPY_MODEL, HASHING_SKLEARN_MODEL

    return HASHING_SKLEARN_MODEL if importlib.util.find_spec("sklearn") else HASHING_NUMPY_MODEL


def _embed_with_progress(embed_missing, texts, cache, backend):
    if len(texts) < 512:
        return embed_missing(texts, cache, backend)
    from rich.progress import Progress

    with Progress(transient=True, console=_stderr()) as progress:
        task = progress.add_task("embedding descriptions", total=len(texts))
        return embed_missing(texts, cache, backend, progress=lambda done, total: progress.update(task, completed=done, total=total))


def _stderr():
    from rich.console import Console

    return Console(stderr=True)
