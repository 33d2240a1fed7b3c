"""The one error type of the evaluator's steps: a one-line reason printed as `hybridlm: error: ...`."""


class EvalError(Exception):
    """A one-line reason the build or the score cannot produce a result."""


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else "(no message)"
