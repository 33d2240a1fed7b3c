"""Who wrote what: SSH keys per account, Git's own SSH commit signatures, and identity refs
(`refs/agora/identity/<account>`, a fast-forward-only chain announcing the account's key)."""
