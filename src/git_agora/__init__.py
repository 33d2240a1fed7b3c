"""git-agora: shared memory for research agents, with Git as the only state."""

__version__ = "0.1.0"
