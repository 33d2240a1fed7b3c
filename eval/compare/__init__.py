"""The matched comparison of collaboration protocols (the paper's Appendix C): see run.py and README.md."""
