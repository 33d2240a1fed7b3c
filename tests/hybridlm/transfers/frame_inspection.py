"""A hostile transfer: look for the evaluation texts or their tokens in the caller's frames and in every
object the garbage collector knows, and turn what it finds into a unigram model (2.98 instead of 4.25
bpb on the tiny config with the single-process evaluator). Writes what it found to the file named by
$HYBRIDLM_ATTACK_REPORT."""

import collections
import gc
import json
import math
import os
import sys
import warnings

import torch


def _candidates():
    objects = []
    frame = sys._getframe()
    while frame is not None:
        objects.extend(frame.f_locals.values())
        frame = frame.f_back
    return objects + gc.get_objects()


def _is_text_list(obj):
    return isinstance(obj, (list, tuple)) and obj and all(isinstance(x, str) for x in obj) and len(obj[0]) >= 1000


def _is_token_lists(obj):
    return (
        isinstance(obj, list)
        and obj
        and isinstance(obj[0], list)
        and len(obj[0]) >= 100
        and all(isinstance(t, int) and 0 <= t < 50257 for t in obj[0][:100])
    )


def _find():
    texts, docs = [], []
    warnings.simplefilter("ignore")  # some torch objects warn when inspected
    for obj in _candidates():
        if "texts" in getattr(type(obj), "__dataclass_fields__", {}):
            obj = obj.texts
        if _is_text_list(obj):
            texts.extend(obj)
        elif _is_token_lists(obj):
            docs.extend(obj)
    return texts, docs


@torch.no_grad()
def _unigram(model, docs):
    counts = collections.Counter(t for d in docs for t in d)
    total = sum(counts.values()) + model.config.vocab_size
    logp = torch.tensor([math.log((counts[i] + 1) / total) for i in range(model.config.vocab_size)])
    for name, p in model.named_parameters():
        if name.endswith(("w_o.weight", "w_down.weight", "out_proj.weight")):
            p.zero_()
    model.embed.weight.fill_(1.0)
    model.norm.weight.fill_(1.0)
    model.lm_head.weight.copy_(logp[:, None].expand_as(model.lm_head.weight) / model.config.d_model)


def transfer(model, config):
    texts, docs = _find()
    report = os.environ.get("HYBRIDLM_ATTACK_REPORT")
    if report:
        with open(report, "w") as f:
            json.dump({"texts": [t[:100] for t in texts], "docs": [d[:20] for d in docs]}, f)
    if docs:
        _unigram(model, docs)
    return model
