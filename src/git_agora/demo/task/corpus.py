"""The demo task's data (an evaluator file, fixed by the setup): English text that ships with Python,
the help topics in `pydoc_data`, split by topic into a training part and a held-out part."""

from pydoc_data.topics import topics

TRAIN_CHARS = 120_000
TEST_CHARS = 12_000


def split():
    """(train, test): every 8th topic is held out; the rest trains."""
    names = sorted(topics)
    test = "".join(topics[n] for n in names[::8])[:TEST_CHARS]
    train = "".join(topics[n] for i, n in enumerate(names) if i % 8)[:TRAIN_CHARS]
    return train, test
