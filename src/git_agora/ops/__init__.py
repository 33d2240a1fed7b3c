"""The workflows of git-agora, one module each; `git_agora` re-exports them as the public API."""
