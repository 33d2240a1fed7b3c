"""The model choices: the one file workers change. Each line is one knob of the character n-gram model."""

ORDER = 2  # context length in characters (0 = unigram)
METHOD = "additive"  # additive | absolute | witten_bell
ADDITIVE_ALPHA = 1.0  # pseudo-count for additive smoothing
DISCOUNT = 0.5  # absolute discounting: subtracted from every seen count
INTERPOLATE = False  # mix in lower orders (otherwise back off only for unseen contexts)
LOWERCASE = False  # fold case in the training text and the context; the held-out text is scored as written
